//! A small map keyed by id: a vector of pairs. A page holds at most a few
//! thousand attempts, and a linear scan over them costs microseconds, while
//! a hash table per value type costs kilobytes of wasm.

use uuid::Uuid;

/// A map from ids to values, in insertion order.
#[derive(Clone, Debug, PartialEq)]
pub struct IdMap<V>(Vec<(Uuid, V)>);

impl<V> Default for IdMap<V> {
    fn default() -> Self {
        IdMap(Vec::new())
    }
}

impl<V> IdMap<V> {
    fn position(&self, id: &Uuid) -> Option<usize> {
        self.0.iter().position(|(k, _)| k == id)
    }

    /// Whether the id is present.
    pub fn contains_key(&self, id: &Uuid) -> bool {
        self.position(id).is_some()
    }

    /// The value of an id.
    pub fn get(&self, id: &Uuid) -> Option<&V> {
        self.position(id).map(|i| &self.0[i].1)
    }

    /// The value of an id, mutably.
    pub fn get_mut(&mut self, id: &Uuid) -> Option<&mut V> {
        self.position(id).map(|i| &mut self.0[i].1)
    }

    /// Sets the value of an id, returning the old one.
    pub fn insert(&mut self, id: Uuid, value: V) -> Option<V> {
        match self.position(&id) {
            Some(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            None => {
                self.0.push((id, value));
                None
            }
        }
    }

    /// The value of an id, inserting `default()` first when absent.
    pub fn get_or_insert_with(&mut self, id: Uuid, default: impl FnOnce() -> V) -> &mut V {
        let i = match self.position(&id) {
            Some(i) => i,
            None => {
                self.0.push((id, default()));
                self.0.len() - 1
            }
        };
        &mut self.0[i].1
    }

    /// Removes an id.
    pub fn remove(&mut self, id: &Uuid) -> Option<V> {
        self.position(id).map(|i| self.0.swap_remove(i).1)
    }

    /// The values.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.0.iter().map(|(_, v)| v)
    }

    /// Removes and returns every pair.
    pub fn drain(&mut self) -> impl Iterator<Item = (Uuid, V)> + '_ {
        self.0.drain(..)
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The ids.
    pub fn keys(&self) -> impl Iterator<Item = &Uuid> {
        self.0.iter().map(|(k, _)| k)
    }

    /// The pairs.
    pub fn iter(&self) -> impl Iterator<Item = (&Uuid, &V)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    /// How many pairs.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Keeps only the pairs `keep` says yes to.
    pub fn retain(&mut self, mut keep: impl FnMut(&Uuid, &mut V) -> bool) {
        self.0.retain_mut(|(k, v)| keep(k, v));
    }
}

/// A set of ids, in insertion order.
pub type IdSet = IdMap<()>;
