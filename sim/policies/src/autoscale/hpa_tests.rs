//! HPA decisions against hand-computed cases (tolerance band, readiness, scale-up limits,
//! scale-down stabilisation window).

use super::*;

fn at(s: u64) -> SimTime {
    SimTime::from_secs(s)
}

fn cfg(metric: HpaMetric, target: f64) -> CalcConfig {
    CalcConfig {
        metric,
        target,
        tolerance: 0.1,
        cpu_init_period: at(300),
        initial_readiness_delay: at(30),
    }
}

fn running(util: f64, now: SimTime) -> PodObs {
    let m = MetricSample {
        value: util,
        timestamp: now,
        window: at(60),
    };
    PodObs {
        phase: OnlinePodPhase::Running,
        ready: true,
        ready_transition: SimTime::ZERO,
        start_time: SimTime::ZERO,
        gpu_util: Some(m),
        cpu_util: Some(m),
        sps: Some(m),
    }
}

fn pending() -> PodObs {
    PodObs {
        phase: OnlinePodPhase::Pending,
        ready: false,
        ready_transition: SimTime::ZERO,
        start_time: SimTime::ZERO,
        gpu_util: None,
        cpu_util: None,
        sps: None,
    }
}

fn missing() -> PodObs {
    PodObs {
        phase: OnlinePodPhase::Running,
        ready: false,
        gpu_util: None,
        cpu_util: None,
        sps: None,
        ..pending()
    }
}

#[test]
fn tolerance_band_keeps_the_count_and_outside_it_scales_by_the_ratio() {
    let now = at(1000);
    let c = cfg(HpaMetric::GpuUtil, 0.7);
    // 0.75 / 0.7 = 1.071: inside the 10% band.
    let pods = vec![running(0.75, now); 4];
    assert_eq!(replica_calc(4, &pods, &c, now), Ok(4));
    // 0.8 / 0.7 = 1.143: ceil(1.143 * 4) = ceil(4.57) = 5.
    let pods = vec![running(0.8, now); 4];
    assert_eq!(replica_calc(4, &pods, &c, now), Ok(5));
    // 0.3 / 0.7 = 0.43: ceil(0.43 * 4) = ceil(1.71) = 2.
    let pods = vec![running(0.3, now); 4];
    assert_eq!(replica_calc(4, &pods, &c, now), Ok(2));
}

#[test]
fn unready_and_missing_pods_are_handled_as_the_replica_calculator_does() {
    let now = at(1000);
    let c = cfg(HpaMetric::GpuUtil, 0.5);
    // Scale-up with 2 pending: [1, 1, 0, 0] -> ratio 1.0, inside tolerance -> keep 4.
    let pods = vec![running(1.0, now), running(1.0, now), pending(), pending()];
    assert_eq!(replica_calc(4, &pods, &c, now), Ok(4));
    // [0.9 x3, 0] -> mean 0.675 / 0.5 = 1.35 -> ceil(1.35 * 4) = 6.
    let pods = vec![
        running(0.9, now),
        running(0.9, now),
        running(0.9, now),
        pending(),
    ];
    assert_eq!(replica_calc(4, &pods, &c, now), Ok(6));
    // Scale-down with 2 missing: they count as the target, [0.2, 0.2, 0.5, 0.5]
    // -> 0.35 / 0.5 = 0.7 -> ceil(2.8) = 3.
    let pods = vec![running(0.2, now), running(0.2, now), missing(), missing()];
    assert_eq!(replica_calc(4, &pods, &c, now), Ok(3));
    // Scale-up with 1 missing: it counts as 0, [0.9, 0.9, 0] -> 1.2 -> ceil(3.6) = 4.
    let pods = vec![running(0.9, now), running(0.9, now), missing()];
    assert_eq!(replica_calc(3, &pods, &c, now), Ok(4));
    // Scale-down with pending pods only: unready pods are ignored, ceil(0.4 * 2) = 1.
    let pods = vec![running(0.2, now), running(0.2, now), pending()];
    assert_eq!(replica_calc(3, &pods, &c, now), Ok(1));
    // Nothing reports: an error, the controller keeps the count.
    assert_eq!(
        replica_calc(2, &[pending(), missing()], &c, now),
        Err(CalcError::NoMetrics)
    );
    let mut ctl = Controller::default_behaviour(1, 100);
    assert_eq!(ctl.reconcile(now, 2, Err(CalcError::NoMetrics)), 2);
}

#[test]
fn cpu_metric_ignores_pods_in_their_initialisation_window() {
    let now = at(100);
    let c = cfg(HpaMetric::CpuUtil, 0.5);
    // Started 100 s ago (inside the 300 s init period), Ready 10 s ago: the 60 s sample
    // window began before the transition, so the pod is unready.
    let mut fresh = running(1.0, now);
    fresh.ready_transition = at(90);
    let warm = running(1.0, now);
    // ratio 2 with one unready pod: [1, 0] -> 1.0 -> within tolerance -> keep 2.
    assert_eq!(replica_calc(2, &[warm, fresh], &c, now), Ok(2));
    // The same pods with the gpu metric: no readiness rule, ceil(2 * 2) = 4.
    let g = cfg(HpaMetric::GpuUtil, 0.5);
    assert_eq!(replica_calc(2, &[warm, fresh], &g, now), Ok(4));
    // CPU scale-down with a missing pod counts it at max(100%, target) = 1.0:
    // [0.1, 1.0] / 0.5 -> 1.1 > 1 while the ratio was < 1 -> direction change -> keep 2.
    assert_eq!(
        replica_calc(2, &[running(0.1, now), missing()], &c, at(1000)),
        Ok(2)
    );
}

#[test]
fn scale_up_is_limited_to_max_of_4_pods_and_100_percent_per_15_s() {
    let mut ctl = Controller::default_behaviour(1, 100);
    // From 2: max(2 + 4, 2 * 2) = 6.
    assert_eq!(ctl.reconcile(at(0), 2, Ok(20)), 6);
    // 10 s later the +4 is still inside the 15 s period: the period started at 2 -> 6.
    assert_eq!(ctl.reconcile(at(10), 6, Ok(20)), 6);
    // 15 s after the event it has left the period: max(6 + 4, 12) = 12.
    assert_eq!(ctl.reconcile(at(15), 6, Ok(20)), 12);
    // From 12: max(16, 24) = 24, capped by the recommendation 20.
    assert_eq!(ctl.reconcile(at(30), 12, Ok(20)), 20);
    // maxReplicas bounds the limit.
    let mut small = Controller::default_behaviour(1, 5);
    assert_eq!(small.reconcile(at(0), 2, Ok(20)), 5);
}

#[test]
fn scale_down_waits_for_the_300_s_stabilisation_window() {
    let mut ctl = Controller::default_behaviour(1, 100);
    assert_eq!(ctl.reconcile(at(0), 10, Ok(10)), 10);
    // Every later recommendation is 4, but the window's maximum (10 at t=0) holds...
    for s in (15..300).step_by(15) {
        assert_eq!(ctl.reconcile(at(s), 10, Ok(4)), 10, "t = {s} s");
    }
    // ...until the t=0 recommendation is 300 s old.
    assert_eq!(ctl.reconcile(at(300), 10, Ok(4)), 4);
    // Scale-up has no window: a rise applies at once.
    assert_eq!(ctl.reconcile(at(315), 4, Ok(7)), 7);
}

#[test]
fn spec_strings_configure_metric_and_target() {
    let s = PolicySpec::parse("hpa[metric=sps,target=8000,min=2,max=16]").unwrap();
    let h = Hpa::from_spec(&s).unwrap();
    assert_eq!(h.calc.metric, HpaMetric::Sps);
    assert_eq!(h.calc.target, 8000.0);
    assert_eq!((h.ctl.min_replicas, h.ctl.max_replicas), (2, 16));
    assert!(Hpa::from_spec(&PolicySpec::parse("hpa[metric=mem]").unwrap()).is_err());
    assert!(Hpa::from_spec(&PolicySpec::parse("hpa[min=5,max=2]").unwrap()).is_err());
    assert!(Hpa::from_spec(&PolicySpec::parse("hpa[window=3]").unwrap()).is_err());
}

#[test]
fn scale_up_window_takes_the_minimum_recommendation_of_the_window() {
    let mut ctl = Controller::default_behaviour(1, 100);
    ctl.up_window = at(60);
    assert_eq!(ctl.reconcile(at(0), 4, Ok(4)), 4);
    // The window's minimum (4 at t=0) holds while it is inside the 60 s window...
    assert_eq!(ctl.reconcile(at(15), 4, Ok(6)), 4);
    assert_eq!(ctl.reconcile(at(45), 4, Ok(9)), 4);
    // ...and at t=60 the minimum of {6, 9, 7} is 6, within the {+4, +100%} limit of 8.
    assert_eq!(ctl.reconcile(at(60), 4, Ok(7)), 6);
    // A scale-down still follows the (default 300 s) down window: max(4, 6, 9, 7, 2) = 9
    // caps it above the current 6, so the count stays.
    assert_eq!(ctl.reconcile(at(75), 6, Ok(2)), 6);
}

#[test]
fn select_policy_picks_the_smallest_or_largest_change_or_none() {
    // Up from 10 with {+4 pods, +100%}: Max allows 20, Min allows 14.
    let mut max = Controller::default_behaviour(1, 100);
    assert_eq!(max.reconcile(at(0), 10, Ok(30)), 20);
    let mut min = Controller::default_behaviour(1, 100);
    min.up_select = SelectPolicy::Min;
    assert_eq!(min.reconcile(at(0), 10, Ok(30)), 14);
    // Down from 10 with {-3 pods, -50%} per 60 s and no window: Max allows the larger
    // change (to 5), Min the smaller (to 7); 30 s later the period still starts at 10.
    let down = |select| {
        let mut c = Controller::default_behaviour(1, 100);
        c.down_window = SimTime::ZERO;
        c.down_policies = vec![
            RatePolicy::Pods {
                value: 3,
                period_s: 60,
            },
            RatePolicy::Percent {
                value: 50,
                period_s: 60,
            },
        ];
        c.down_select = select;
        c
    };
    let mut c = down(SelectPolicy::Max);
    assert_eq!(c.reconcile(at(0), 10, Ok(2)), 5);
    assert_eq!(c.reconcile(at(30), 5, Ok(2)), 5);
    let mut c = down(SelectPolicy::Min);
    assert_eq!(c.reconcile(at(0), 10, Ok(2)), 7);
    // From 7 the period start is 10: max(10 - 3, 10 * 0.5) = 7, no further change yet.
    assert_eq!(c.reconcile(at(30), 7, Ok(2)), 7);
    assert_eq!(c.reconcile(at(60), 7, Ok(2)), 4);
    let mut c = down(SelectPolicy::Disabled);
    assert_eq!(c.reconcile(at(0), 10, Ok(2)), 10);
}

#[test]
fn spec_strings_configure_the_behaviour() {
    let s = PolicySpec::parse(
        "hpa[up_window_s=540,down_window_s=1080,down_pods=2,down_percent=0,down_period_s=60,up_select=min]",
    )
    .unwrap();
    let h = Hpa::from_spec(&s).unwrap();
    assert_eq!((h.ctl.up_window, h.ctl.down_window), (at(540), at(1080)));
    assert_eq!(
        h.ctl.down_policies,
        vec![RatePolicy::Pods {
            value: 2,
            period_s: 60
        }]
    );
    assert_eq!(h.ctl.up_select, SelectPolicy::Min);
    assert_eq!(h.ctl.down_select, SelectPolicy::Max);
    // The defaults are the autoscaling/v2 ones.
    let d = Hpa::from_spec(&PolicySpec::parse("hpa").unwrap()).unwrap();
    let v2 = Controller::default_behaviour(1, 10_000);
    assert_eq!(
        (d.ctl.up_window, d.ctl.down_window),
        (v2.up_window, v2.down_window)
    );
    assert_eq!(d.ctl.up_policies, v2.up_policies);
    assert_eq!(d.ctl.down_policies, v2.down_policies);
    for bad in [
        "hpa[up_window_s=3601]",
        "hpa[down_select=fast]",
        "hpa[up_period_s=0]",
    ] {
        assert!(
            Hpa::from_spec(&PolicySpec::parse(bad).unwrap()).is_err(),
            "{bad}"
        );
    }
}
