//! `round-robin`: each request starts one target further along the list
//! and wraps around, so n requests lead with each of n targets once. Use
//! it to spread load evenly over equal targets. The rotation moves on when
//! a request is planned; when a later target serves instead (the head
//! failed), the next request starts after the one that served, so a
//! failing head is not tried first twice in a row.

/// The rotation's position: the index the next request starts at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rotation {
    pub next: usize,
}

impl Rotation {
    /// A target at `index` of `n` served: the next request starts after it.
    pub fn served(&mut self, index: usize, n: usize) {
        self.next = (index + 1) % n.max(1);
    }
}

pub fn order(n: usize, rotation: &mut Rotation) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let start = rotation.next % n;
    rotation.next = (start + 1) % n;
    (0..n).map(|k| (start + k) % n).collect()
}
