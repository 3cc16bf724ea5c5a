//! A big Inspect AI log made from the fixture run A (`tests/fixtures/inspect-ai`), for the test
//! families that read a log of many samples.

use std::path::Path;

/// Writes at `path` the `.eval` log of the JSON log `json_log` (run A's) with its samples
/// `copies` times over, each copy with new sample ids (`geo-01-3`): a finished log of
/// `8 × copies` samples, deflate members, more than one group of samples to read once `copies`
/// is over 4.
pub fn many_samples_log(json_log: &Path, path: &Path, copies: usize) {
    use std::io::Write;
    let json_form: serde_json::Value =
        serde_json::from_slice(&std::fs::read(json_log).unwrap()).unwrap();
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let mut header = json_form.clone();
    header.as_object_mut().unwrap().remove("samples");
    zip.start_file("header.json", options).unwrap();
    zip.write_all(header.to_string().as_bytes()).unwrap();
    for copy in 0..copies {
        for sample in json_form["samples"].as_array().unwrap() {
            let mut sample = sample.clone();
            let id = format!("{}-{copy}", sample["id"].as_str().unwrap());
            sample["id"] = serde_json::Value::from(id.clone());
            zip.start_file(format!("samples/{id}_epoch_1.json"), options)
                .unwrap();
            zip.write_all(sample.to_string().as_bytes()).unwrap();
        }
    }
    zip.finish().unwrap();
}
