//! Rendering: one pure function per region, all reading `&App`. Nothing here mutates state.

pub mod detail;
pub mod help;
pub mod highlight;
pub mod layout;
pub mod list;
pub mod status;
pub mod tree;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::widgets::Clear;

use super::app::App;

/// Draws the whole screen for the current state.
pub fn render(frame: &mut Frame, app: &App) {
    let regions =
        layout::Regions::compute(frame.area(), app.payload_fullscreen, app.list.rows.len());
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
        super::diff::render(
            frame,
            body,
            &overlay.report,
            &overlay.state,
            app.reveal,
            &app.config.theme,
        );
    }
    if app.show_help {
        help::render(frame, frame.area(), app);
    } else if app.show_problems {
        help::render_problems(frame, frame.area(), app);
    }
}
