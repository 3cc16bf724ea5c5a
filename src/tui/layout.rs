//! Where each region goes. A pure function of the screen size and the full-screen flag: the
//! drawing uses it and returns what it used (mouse hit-testing reads that), and `update` uses
//! it for page sizes and scroll windows before the next frame is drawn.

use ratatui::layout::{Margin, Rect};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Regions {
    pub list: Rect,
    pub tree: Rect,
    pub detail: Rect,
    pub status: Rect,
    pub footer: Rect,
}

impl Regions {
    /// `list_rows` is how many invocations are listed: a short list leaves room for the tree.
    pub fn compute(screen: Rect, payload_fullscreen: bool, list_rows: usize) -> Regions {
        let body_height = screen.height.saturating_sub(2);
        let status = Rect::new(
            screen.x,
            screen.y + body_height,
            screen.width,
            1.min(screen.height),
        );
        let footer = Rect::new(
            screen.x,
            screen.y + body_height + 1,
            screen.width,
            screen.height.saturating_sub(body_height + 1).min(1),
        );
        let body = Rect::new(screen.x, screen.y, screen.width, body_height);
        if payload_fullscreen {
            return Regions {
                detail: body,
                status,
                footer,
                ..Default::default()
            };
        }
        let wanted = u16::try_from(list_rows.saturating_add(3)).unwrap_or(u16::MAX);
        let list_height = wanted.min(body_height * 2 / 5).max(5).min(body_height);
        let list = Rect::new(body.x, body.y, body.width, list_height);
        let bottom_height = body_height - list_height;
        let tree_width = if body.width >= 100 {
            body.width * 11 / 20
        } else {
            body.width / 2 + 4
        }
        .min(body.width);
        let tree = Rect::new(body.x, body.y + list_height, tree_width, bottom_height);
        let detail = Rect::new(
            body.x + tree_width,
            body.y + list_height,
            body.width - tree_width,
            bottom_height,
        );
        Regions {
            list,
            tree,
            detail,
            status,
            footer,
        }
    }

    /// The list's rows: inside the border, below the header line.
    pub fn list_body(&self) -> Rect {
        let inner = inner(self.list);
        Rect::new(
            inner.x,
            inner.y + 1.min(inner.height),
            inner.width,
            inner.height.saturating_sub(1),
        )
    }
    pub fn tree_body(&self) -> Rect {
        inner(self.tree)
    }
    pub fn detail_body(&self) -> Rect {
        inner(self.detail)
    }
}

pub fn inner(rect: Rect) -> Rect {
    rect.inner(Margin::new(1, 1))
}

/// A centred rectangle `percent_x` by `percent_y` of `area`.
pub fn centered(area: Rect, percent_x: u16, percent_y: u16) -> Rect {
    let width = area.width * percent_x / 100;
    let height = area.height * percent_y / 100;
    Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    )
}
