//! The count's rule, for any key (a function, a kind of event): per key,
//! its fewest per event in any of a mechanism's runs.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::Hash;

/// Per window, a figure per key.
pub type Windows<K> = HashMap<u64, HashMap<K, f64>>;

/// Per key, its fewest per event in any of `windows` (zero where a
/// window did not run it).
pub fn least<K: Ord + Hash + Clone>(windows: &[u64], per: &Windows<K>) -> BTreeMap<K, f64> {
    let runs: Vec<&HashMap<K, f64>> = windows.iter().filter_map(|w| per.get(w)).collect();
    let keys: BTreeSet<&K> = runs.iter().flat_map(|r| r.keys()).collect();
    keys.into_iter()
        .map(|key| {
            let min = runs
                .iter()
                .map(|r| r.get(key).copied().unwrap_or(0.0))
                .fold(f64::INFINITY, f64::min);
            (key.clone(), min)
        })
        .collect()
}

/// Every key of either side, in order, with its figure on each (zero
/// where that side has none).
pub fn side_by_side<K: Ord + Clone>(
    a: &BTreeMap<K, f64>,
    b: &BTreeMap<K, f64>,
) -> Vec<(K, f64, f64)> {
    let keys: BTreeSet<&K> = a.keys().chain(b.keys()).collect();
    let at = |m: &BTreeMap<K, f64>, k: &K| m.get(k).copied().unwrap_or(0.0);
    keys.into_iter()
        .map(|k| (k.clone(), at(a, k), at(b, k)))
        .collect()
}
