//! An attribute list's one word ([`Slot`], defined with the model's other packed forms): what
//! the attribute list asks of it beyond viewing it.

pub(super) use crate::model::packed::{
    OpenList, Slot, SlotRepr as Repr, SlotView as View, SlotViewMut,
};

impl Slot {
    pub(super) fn is_open(&self) -> bool {
        matches!(self.view(), View::Open(_))
    }

    /// The open list, to change (`None` while packed).
    pub(super) fn open_mut(&mut self) -> Option<&mut OpenList> {
        match self.view_mut() {
            SlotViewMut::Open(list) => Some(list),
            SlotViewMut::Packed(_) => None,
        }
    }

    /// Puts `repr` in and hands back what was there.
    pub(super) fn replace(&mut self, repr: Repr) -> Repr {
        std::mem::replace(self, Slot::new(repr)).into_owned()
    }
}
