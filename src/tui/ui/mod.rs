//! Rendering: one pure function per region, all reading `&App`. Nothing here mutates state.
//! The open overlay draws itself over the panes (`tui::overlays`).

pub mod detail;
pub mod highlight;
pub mod list;
pub mod status;
pub mod tree;

use ratatui::Frame;

use super::app::App;
use super::layout::Regions;

/// Draws the whole screen for the current state and returns the regions it drew the panes
/// in, which the event loop hands back to the app for mouse hit-testing.
pub fn render(frame: &mut Frame, app: &App) -> Regions {
    let regions = Regions::compute(frame.area(), app.payload_fullscreen, app.list.rows().len());
    if !app.payload_fullscreen {
        list::render(frame, regions.list, app);
        tree::render(frame, regions.tree, app);
    }
    detail::render(frame, regions.detail, app);
    status::render_status(frame, regions.status, app);
    status::render_footer(frame, regions.footer, app);
    if let Some(overlay) = &app.overlay {
        overlay.render(frame, &regions, app);
    }
    regions
}
