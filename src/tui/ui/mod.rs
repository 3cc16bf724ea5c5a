//! Rendering: one pure function per region, all reading `&App`. Nothing here mutates state.
//! The overlays draw themselves (`tui::overlays`); this module decides which are on screen.

pub mod detail;
pub mod highlight;
pub mod list;
pub mod status;
pub mod tree;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::widgets::Clear;

use super::app::App;
use super::layout::Regions;
use super::overlays;

/// Draws the whole screen for the current state and returns the regions it drew the panes
/// in, which the event loop hands back to the app for mouse hit-testing.
pub fn render(frame: &mut Frame, app: &App) -> Regions {
    let regions = Regions::compute(frame.area(), app.payload_fullscreen, app.list.rows.len());
    if !app.payload_fullscreen {
        list::render(frame, regions.list, app);
        tree::render(frame, regions.tree, app);
    }
    detail::render(frame, regions.detail, app);
    status::render_status(frame, regions.status, app);
    status::render_footer(frame, regions.footer, app);
    if let Some(overlay) = &app.diff {
        let body = Rect::new(
            0,
            0,
            frame.area().width,
            regions.status.y.min(frame.area().height),
        );
        frame.render_widget(Clear, body);
        overlays::diff::render(
            frame,
            body,
            &overlay.report,
            &overlay.state,
            app.reveal,
            &app.config,
        );
    }
    if app.show_help {
        overlays::help::render(frame, frame.area(), app);
    } else if app.show_problems {
        overlays::problems::render(frame, frame.area(), app);
    }
    regions
}
