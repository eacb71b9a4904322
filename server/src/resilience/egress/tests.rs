use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn siblings_are_the_pool_members_seen_on_the_same_ip_within_24_h() {
    let m = EgressMap::default();
    let now = 1_000_000_000;
    m.record("a", ip("10.0.0.1"), now);
    m.record("b", ip("10.0.0.1"), now - 1000);
    m.record("c", ip("10.0.0.2"), now);
    m.restore("d", ip("10.0.0.1"), now - EGRESS_WINDOW_MS - 1);
    m.restore("e", ip("10.0.0.1"), now - EGRESS_WINDOW_MS);
    let pool = ["a", "b", "c", "d", "e", "f"];
    assert_eq!(m.sharing(ip("10.0.0.1"), pool, now), vec!["a", "b", "e"]);
    assert_eq!(m.sharing(ip("10.0.0.1"), ["b", "c"], now), vec!["b"], "only the pool counts");
    assert_eq!(m.ip_of("d", now), None, "older than the window");
    assert_eq!(m.ip_of("f", now), None, "never seen");
}

#[test]
fn the_newest_observation_wins() {
    let m = EgressMap::default();
    m.record("a", ip("10.0.0.1"), 5_000);
    m.restore("a", ip("10.0.0.9"), 4_000);
    assert_eq!(m.ip_of("a", 5_000), Some(ip("10.0.0.1")), "an older stored row does not replace it");
    m.record("a", ip("10.0.0.2"), 6_000);
    assert_eq!(m.ip_of("a", 6_000), Some(ip("10.0.0.2")), "a new IP replaces it at once");
}

#[test]
fn an_unchanged_ip_is_restamped_at_most_once_a_minute() {
    let m = EgressMap::default();
    let t0 = 0;
    m.record("a", ip("10.0.0.1"), t0);
    m.record("a", ip("10.0.0.1"), t0 + RESTAMP_MS - 1);
    let window_end = t0 + EGRESS_WINDOW_MS;
    assert_eq!(m.ip_of("a", window_end), Some(ip("10.0.0.1")));
    assert_eq!(m.ip_of("a", window_end + 1), None, "the second record within a minute did not restamp");
    m.record("a", ip("10.0.0.1"), t0 + RESTAMP_MS);
    assert_eq!(m.ip_of("a", window_end + 1), Some(ip("10.0.0.1")), "a minute later it did");
}
