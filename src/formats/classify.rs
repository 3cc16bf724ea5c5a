//! Classification and fact extraction from span attributes, for every attribute convention
//! (OpenArmature, OTel GenAI current and legacy, OpenInference, Langfuse). See ARCHITECTURE.md.
