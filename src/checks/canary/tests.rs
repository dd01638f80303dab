//! The canary checks' unit tests, across concepts: gate tests build
//! histograms and read the statistics, so they share one set of helpers.

use super::decision::*;
use super::gate::*;
use super::histogram::*;
use super::statistics::*;

fn close(a: f64, b: f64, tol: f64) {
    assert!((a - b).abs() <= tol, "{a} vs {b} (diff {:e})", (a - b).abs());
}

// Expected values from scipy 1.17.1 (computed once, hard-coded).

#[test]
fn z_test_matches_scipy() {
    // z = (p1-p2)/sqrt(p(1-p)(1/n1+1/n2)); scipy.stats.norm.sf(z)
    let t = two_proportion_z(130.0, 10_000.0, 100.0, 10_000.0).unwrap();
    close(t.statistic, 1.989614786521866, 1e-9);
    close(t.p_value, 0.023316693019580684, 1e-9);
    let t = two_proportion_z(8.0, 1000.0, 12.0, 1000.0).unwrap();
    close(t.p_value, 0.8156558653191092, 1e-9);
    // A huge difference: far tail still accurate (norm.sf(z)).
    let t = two_proportion_z(800.0, 10_000.0, 100.0, 10_000.0).unwrap();
    close(t.p_value, 2.6716184583199285e-126, 1e-130);
}

#[test]
fn fisher_matches_scipy() {
    // scipy.stats.fisher_exact([[5, 95], [1, 99]], alternative='greater').pvalue
    close(fisher_exact_greater(5, 100, 1, 100).unwrap().p_value, 0.10582392634786585, 1e-9);
    // scipy.stats.fisher_exact([[3, 17], [0, 20]], alternative='greater').pvalue
    close(fisher_exact_greater(3, 20, 0, 20).unwrap().p_value, 0.1153846153846154, 1e-9);
    // scipy.stats.fisher_exact([[1020, 98980], [950, 99050]], alternative='greater').pvalue
    close(fisher_exact_greater(1020, 100_000, 950, 100_000).unwrap().p_value, 0.05909723156181717, 1e-9);
}

#[test]
fn binomial_matches_scipy() {
    // scipy.stats.binomtest(30, 1000, 0.02, alternative='greater').pvalue
    close(binom_test_greater(30, 1000, 0.02).unwrap().p_value, 0.02069651867323949, 1e-9);
    // scipy.stats.binomtest(0, 50, 0.05, alternative='greater').pvalue
    close(binom_test_greater(0, 50, 0.05).unwrap().p_value, 1.0, 1e-12);
}

#[test]
fn mann_whitney_matches_scipy() {
    let x = [1.0, 2.0, 2.0, 3.0, 5.0, 8.0, 8.0, 9.0];
    let y = [0.5, 1.0, 2.0, 2.0, 2.0, 4.0, 4.0];
    // scipy.stats.mannwhitneyu(x, y, alternative='greater', method='asymptotic')
    let t = mann_whitney_u(&x, &y).unwrap();
    close(t.statistic, 41.5, 1e-12);
    close(t.p_value, 0.06222772238479956, 1e-9);
    // Binned = raw on bin-index values. x bins [3,5,0,2], y bins [6,2,1,0]:
    // scipy.stats.mannwhitneyu(np.repeat([0,1,2,3],[3,5,0,2]), np.repeat([0,1,2,3],[6,2,1,0]), alternative='greater', method='asymptotic')
    let t = mann_whitney_binned(&[3.0, 5.0, 0.0, 2.0], &[6.0, 2.0, 1.0, 0.0]).unwrap();
    close(t.statistic, 62.0, 1e-12);
    close(t.p_value, 0.07135006634920518, 1e-9);
    let raw = mann_whitney_u(
        &[0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 3.0, 3.0],
        &[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 2.0],
    )
    .unwrap();
    close(raw.p_value, t.p_value, 1e-12);
}

#[test]
fn sample_sizes() {
    // Fleiss: ((za*sqrt(2*pb*(1-pb)) + zb*sqrt(p0*(1-p0)+p1*(1-p1)))/(p1-p0))**2 with
    // za = scipy.stats.norm.ppf(0.95), zb = norm.ppf(0.8): 128_469.40… → 128_470
    assert_eq!(n_two_proportions(0.01, 0.011, ALPHA, POWER), Some(128_470));
    // Detecting 1% → 2% errors needs thousands of requests, not 20.
    assert_eq!(n_two_proportions(0.01, 0.02, ALPHA, POWER), Some(1_826));
    assert_eq!(n_two_proportions(0.02, 0.01, ALPHA, POWER), None);
    // (za+zb)^2 / (6*0.1^2) = 103.04…
    assert_eq!(n_mann_whitney(0.6, ALPHA, POWER), Some(104));
    assert_eq!(n_mann_whitney(0.5, ALPHA, POWER), None);
}

fn hist(pairs: &[(f64, f64)]) -> Histogram {
    Histogram::from_buckets(pairs.to_vec())
}

#[test]
fn histogram_quantile_like_prometheus() {
    let h = hist(&[(0.1, 50.0), (0.2, 90.0), (0.5, 100.0), (f64::INFINITY, 100.0)]);
    // rank 95 lies in (0.2, 0.5]: 0.2 + 0.3 * 5/10
    close(h.quantile(0.95).unwrap(), 0.35, 1e-12);
    close(h.quantile(0.5).unwrap(), 0.1, 1e-12);
    close(h.cdf(0.35), 0.95, 1e-12);
    // Rank in +Inf → highest finite bound.
    let h2 = hist(&[(0.1, 10.0), (f64::INFINITY, 100.0)]);
    assert_eq!(h2.quantile(0.95), Some(0.1));
    // Extrapolated increase() counts can dip; they are made monotonic.
    let h3 = hist(&[(0.1, 10.0), (0.2, 9.5), (f64::INFINITY, 12.0)]);
    assert_eq!(h3.cumulative, vec![10.0, 10.0, 12.0]);
    assert!(hist(&[]).quantile(0.95).is_none());
    // P(1·X > Y) = 1/2 for a continuous model; larger scale → larger.
    close(h.superiority_scaled(1.0), 0.5, 0.01);
    assert!(h.superiority_scaled(1.5) > 0.6);
}

fn prop(value: f64, total: f64) -> Side {
    Side::Proportion { value: Some(value), total }
}

fn error_gate(c: Side, b: Side) -> GateInput {
    GateInput {
        metric: "error_rate".into(),
        kind: MetricKind::Proportion,
        quantile: 0.95,
        max_absolute: Some(0.02),
        max_relative_increase: Some(0.10),
        min_samples: 200,
        window_secs: 600.0,
        candidate: c,
        baseline: b,
        higher_is_better: false,
        min_absolute: None,
        min_relative_decrease: None,
        request_counts: None,
        candidate_only: false,
    }
}

#[test]
fn error_rate_regression_fails() {
    let o = evaluate_gate(&error_gate(prop(0.08, 5000.0), prop(0.01, 5000.0)));
    assert_eq!(o.verdict, GateVerdict::Fail, "{o:?}");
    assert!(o.version_tied());
    assert!(o.checks.iter().all(|c| c.supported));
}

#[test]
fn one_request_in_twenty_is_inconclusive() {
    // 1 canary request out of 20, zero errors: never PASS.
    let o = evaluate_gate(&error_gate(prop(0.0, 1.0), prop(0.0, 19.0)));
    assert_eq!(o.verdict, GateVerdict::Inconclusive);
    assert!(o.message.contains("minSamples"), "{}", o.message);
    // Detecting 0% → 2% (maxAbsolute) needs 305 per side; the candidate
    // arm has 1, at 0.1/min → 304 more take 3040 minutes.
    assert_eq!(o.needed, Some(305), "{o:?}");
    assert_eq!(o.more_samples, Some(304), "{o:?}");
    close(o.more_minutes.unwrap(), 3040.0, 1e-9);
}

#[test]
fn equal_rates_need_the_power_sample_size() {
    // Above minSamples but far below the ~128k needed for +10% on 1%.
    let o = evaluate_gate(&error_gate(prop(0.01, 5000.0), prop(0.01, 5000.0)));
    assert_eq!(o.verdict, GateVerdict::Inconclusive);
    assert_eq!(o.needed, Some(128_470));
    let o = evaluate_gate(&error_gate(prop(0.01, 200_000.0), prop(0.01, 200_000.0)));
    assert_eq!(o.verdict, GateVerdict::Pass, "{o:?}");
}

#[test]
fn no_data_is_never_pass() {
    let o = evaluate_gate(&error_gate(Side::Proportion { value: None, total: 0.0 }, prop(0.01, 5000.0)));
    assert_eq!(o.verdict, GateVerdict::NoData);
    assert!(o.message.contains("candidate"));
    let o = evaluate_gate(&error_gate(Side::Proportion { value: Some(f64::NAN), total: 0.0 }, prop(0.01, 5000.0)));
    assert_eq!(o.verdict, GateVerdict::NoData);
}

#[test]
fn above_limit_without_support_is_inconclusive() {
    // 3% vs 2% on 300 each: above both limits, not significant.
    let o = evaluate_gate(&error_gate(prop(0.03, 300.0), prop(0.02, 300.0)));
    assert_eq!(o.verdict, GateVerdict::Inconclusive, "{o:?}");
    assert!(o.message.contains("not significantly"), "{}", o.message);
}

#[test]
fn zero_baseline_skips_relative_limit() {
    let mut g = error_gate(prop(0.0, 50_000.0), prop(0.0, 50_000.0));
    g.max_absolute = None;
    let o = evaluate_gate(&g);
    assert_eq!(o.verdict, GateVerdict::Inconclusive);
    assert!(o.message.contains("cannot be applied"), "{}", o.message);
    assert_eq!(o.needed, None);
}

#[test]
fn latency_gate_uses_mann_whitney_and_quantile() {
    let base = hist(&[(0.1, 4000.0), (0.2, 9000.0), (0.5, 9900.0), (1.0, 10000.0), (f64::INFINITY, 10000.0)]);
    let slow = hist(&[(0.1, 1000.0), (0.2, 3000.0), (0.5, 7000.0), (1.0, 9800.0), (f64::INFINITY, 10000.0)]);
    let g = GateInput {
        metric: "p95_latency_seconds".into(),
        kind: MetricKind::Histogram,
        quantile: 0.95,
        max_absolute: Some(0.5),
        max_relative_increase: Some(0.2),
        min_samples: 200,
        window_secs: 60.0,
        candidate: Side::Histogram { value: slow.quantile(0.95), hist: slow.clone() },
        baseline: Side::Histogram { value: base.quantile(0.95), hist: base.clone() },
        higher_is_better: false,
        min_absolute: None,
        min_relative_decrease: None,
        request_counts: None,
        candidate_only: false,
    };
    let o = evaluate_gate(&g);
    assert_eq!(o.verdict, GateVerdict::Fail, "{o:?}");
    assert_eq!(o.comparison.unwrap().method, "Mann-Whitney U");
    assert!(o.version_tied());
    let same = GateInput { candidate: g.baseline.clone(), ..g };
    let o = evaluate_gate(&same);
    assert_eq!(o.verdict, GateVerdict::Pass, "{o:?}");
}

#[test]
fn decision_card() {
    let fail = evaluate_gate(&error_gate(prop(0.08, 5000.0), prop(0.01, 5000.0)));
    let steady = Trend {
        candidate_rate: Some(1.0),
        baseline_rate: Some(1.0),
        candidate_latency: Some(1.0),
        baseline_latency: Some(1.0),
    };
    assert_eq!(classify(std::slice::from_ref(&fail), 0, &steady), Situation::VersionRegression);
    let ok = RollbackTarget::Verified {
        path: "../v1/release.yaml".into(),
        version: "v1".into(),
        digest: "sha256:x".into(),
        evidence: "5/5 artifacts OK".into(),
    };
    assert_eq!(decide(Situation::VersionRegression, false, false, &steady, &ok, None).action, "rollback");
    let bad =
        RollbackTarget::Unusable { path: Some("../v1/release.yaml".into()), reason: "tokenizer.json missing".into() };
    let a = decide(Situation::VersionRegression, false, false, &steady, &bad, None);
    assert_eq!(a.action, "degrade");
    assert!(a.precondition.contains("tokenizer.json missing"));
    assert_eq!(decide(Situation::VersionRegression, true, false, &steady, &ok, None).action, "hold");

    // Both slower under doubled load, candidate no worse than baseline.
    let mut both = evaluate_gate(&error_gate(prop(0.03, 50_000.0), prop(0.03, 50_000.0)));
    assert_eq!(both.verdict, GateVerdict::Fail);
    assert!(!both.version_tied());
    let load = Trend {
        candidate_rate: Some(2.0),
        baseline_rate: Some(2.0),
        candidate_latency: Some(3.0),
        baseline_latency: Some(3.0),
    };
    assert_eq!(classify(std::slice::from_ref(&both), 0, &load), Situation::LoadDriven);
    assert_eq!(
        decide(Situation::LoadDriven, false, false, &load, &RollbackTarget::NotChecked, None).action,
        "throttle"
    );
    assert_eq!(classify(std::slice::from_ref(&both), 0, &steady), Situation::Unattributed);
    // Golden failures are the candidate's alone.
    both.verdict = GateVerdict::Pass;
    assert_eq!(classify(std::slice::from_ref(&both), 1, &load), Situation::VersionRegression);
    assert_eq!(classify(&[], 0, &steady), Situation::Undecided);
}

// ---- totality over bad numbers, and higher-is-better tests ----------------

#[test]
fn statistics_are_total_over_nan_inf_and_empty() {
    // Used to loop forever: NaN never equals the merge's current value.
    assert!(mann_whitney_u(&[1.0, f64::NAN], &[2.0]).is_none());
    assert!(mann_whitney_u(&[f64::NAN], &[f64::NAN]).is_none());
    assert!(mann_whitney_u(&[1.0, f64::INFINITY], &[2.0]).is_none());
    assert!(mann_whitney_u(&[], &[2.0]).is_none());
    assert!(mann_whitney_u_less(&[1.0], &[f64::NEG_INFINITY]).is_none());
    assert!(mann_whitney_binned(&[1.0, f64::NAN], &[1.0, 1.0]).is_none());
    assert!(mann_whitney_binned(&[1.0, -1.0], &[1.0, 1.0]).is_none());
    assert!(mann_whitney_binned(&[0.0, 0.0], &[1.0, 1.0]).is_none());
    assert!(mann_whitney_binned(&[1.0], &[1.0, 1.0]).is_none());
    // One sample between the arms (extrapolated halves): the variance is
    // 0/0, which is no evidence, not a NaN p-value.
    assert_eq!(mann_whitney_binned(&[0.5, 0.0], &[0.5, 0.0]).map(|t| t.p_value), Some(1.0));
    assert_eq!(mann_whitney_binned(&[0.25], &[0.75]).map(|t| t.p_value), Some(1.0));
    assert!(two_proportion_z(f64::NAN, 10.0, 1.0, 10.0).is_none());
    assert!(two_proportion_z(1.0, f64::INFINITY, 1.0, 10.0).is_none());
    assert!(two_proportion_z(11.0, 10.0, 1.0, 10.0).is_none());
    assert!(two_proportion_z(1.0, 0.0, 1.0, 10.0).is_none());
    // An arm with no trials is no test, even with no events either.
    assert!(two_proportion_z(0.0, 0.0, 1.0, 10.0).is_none());
    assert!(two_proportion_z(1.0, 10.0, 0.0, 0.0).is_none());
    // Each way a table is not one, alone: more events than trials in
    // either arm, an arm with no trials.
    for (x1, n1, x2, n2) in [(11, 10, 1, 10), (1, 10, 11, 10), (0, 0, 1, 10), (1, 10, 0, 0)] {
        assert!(fisher_exact_greater(x1, n1, x2, n2).is_none(), "{x1}/{n1} vs {x2}/{n2}");
        assert!(proportion_test(x1, n1, x2, n2).is_none(), "{x1}/{n1} vs {x2}/{n2}");
    }
    // Counts whose sums leave u64 choose a test without overflowing: the
    // cells are large, so the z-test, on the same rates.
    let huge = proportion_test(u64::MAX / 2, u64::MAX, u64::MAX / 2, u64::MAX).expect("a valid table");
    assert_eq!((huge.method, huge.p_value), ("two-proportion z", 0.5));
    // All-zero or all-one arms carry no evidence either way; sums past
    // f64's range are no test.
    for (x1, n1, x2, n2) in [(0.0, 10.0, 0.0, 20.0), (10.0, 10.0, 20.0, 20.0)] {
        let t = two_proportion_z(x1, n1, x2, n2).expect("a valid table");
        assert_eq!((t.statistic, t.p_value), (0.0, 1.0), "{x1}/{n1} vs {x2}/{n2}");
    }
    // (Before, 1e308 + 1e308 trials pooled to a rate of 0 and the
    // candidate's 100% read as proof: p = 0.)
    assert!(two_proportion_z(1e308, 1e308, 0.0, 1e308).is_none());
    assert!(two_proportion_z(1e-320, 1e-320, 0.0, 1e-320).is_none());
    assert!(binom_test_greater(1, 10, f64::NAN).is_none());
    assert!(binom_test_greater(1, 0, 0.5).is_none());
    assert!(n_two_proportions(0.01, 0.02, f64::NAN, POWER).is_none());
    assert!(n_mann_whitney(f64::INFINITY, ALPHA, POWER).is_none());
    // What is not a rate, a level or a power gives no sample size, one
    // argument at a time (each beside valid others).
    let nan = f64::NAN;
    for (p0, p1, a, pw) in [
        (nan, 0.02, ALPHA, POWER),
        (0.01, nan, ALPHA, POWER),
        (-0.1, 0.5, ALPHA, POWER),
        (0.01, 1.0, ALPHA, POWER),
        (0.02, 0.02, ALPHA, POWER),
        (0.01, 0.02, 0.0, POWER),
        (0.01, 0.02, 1.0, POWER),
        (0.01, 0.02, 1.5, POWER),
        (0.01, 0.02, ALPHA, 0.0),
        (0.01, 0.02, ALPHA, 1.0),
        (0.01, 0.02, ALPHA, -0.5),
    ] {
        assert_eq!(n_two_proportions(p0, p1, a, pw), None, "{p0} {p1} {a} {pw}");
    }
    assert!(n_two_proportions(0.0, 0.02, ALPHA, POWER).is_some());
    for (p, a, pw) in [
        (nan, ALPHA, POWER),
        (0.5, ALPHA, POWER),
        (1.01, ALPHA, POWER),
        (0.7, 0.0, POWER),
        (0.7, 1.0, POWER),
        (0.7, ALPHA, 0.0),
        (0.7, ALPHA, 1.0),
    ] {
        assert_eq!(n_mann_whitney(p, a, pw), None, "{p} {a} {pw}");
    }
    assert!(n_mann_whitney(1.0, ALPHA, POWER).is_some());
    close(superiority_scaled_samples(&[1.0, f64::NAN], 1.2), 0.5, 0.0);
    close(superiority_scaled_samples(&[1.0, 2.0], f64::INFINITY), 0.5, 0.0);
    close(superiority_scaled_samples(&[1.0, 2.0], f64::NAN), 0.5, 0.0);
    close(superiority_scaled_samples(&[], 1.2), 0.5, 0.0);
    // Prometheus' "NaN"/"+Inf" counts empty the histogram: NO DATA.
    assert_eq!(hist(&[(0.1, f64::NAN), (f64::INFINITY, 10.0)]).total(), 0.0);
    assert_eq!(hist(&[(f64::NAN, 1.0), (f64::INFINITY, 10.0)]).total(), 0.0);
    assert_eq!(hist(&[(0.1, 1.0), (f64::INFINITY, f64::INFINITY)]).total(), 0.0);
}

#[test]
fn more_events_than_baseline_trials_no_longer_underflows() {
    // 10/10 vs 5/5: every expected non-event cell is 0, so Fisher runs with
    // x1 + x2 > n2, where `total - k - n1` used to underflow (panic in debug).
    // scipy.stats.fisher_exact([[10, 0], [5, 0]], alternative='greater').pvalue
    close(proportion_test(10, 10, 5, 5).unwrap().p_value, 1.0, 1e-12);
    // scipy.stats.fisher_exact([[9, 1], [2, 3]], alternative='greater').pvalue
    close(fisher_exact_greater(9, 10, 2, 5).unwrap().p_value, 0.07692307692307693, 1e-9);
}

#[test]
fn higher_is_better_tests_match_scipy() {
    // scipy 1.17.1: scipy.stats.mannwhitneyu(x, y, alternative='less', method='asymptotic')
    let x = [70.0, 71.5, 69.0, 72.0, 68.5, 70.5, 71.0, 69.5];
    let y = [100.0, 98.5, 101.0, 99.0, 102.0, 100.5, 97.5, 99.5];
    let t = mann_whitney_u_less(&x, &y).unwrap();
    close(t.statistic, 0.0, 1e-12);
    close(t.p_value, 0.00046955284955859495, 1e-9);
    // With ties: the same samples as mann_whitney_matches_scipy, both ways.
    let (a, b) = ([1.0, 2.0, 2.0, 3.0, 5.0, 8.0, 8.0, 9.0], [0.5, 1.0, 2.0, 2.0, 2.0, 4.0, 4.0]);
    let t = mann_whitney_u_less(&a, &b).unwrap();
    close(t.statistic, 41.5, 1e-12);
    close(t.p_value, 0.9509888563434155, 1e-9);
    let t = mann_whitney_u_less(&b, &a).unwrap();
    close(t.statistic, 14.5, 1e-12);
    close(t.p_value, 0.06222772238479956, 1e-9);
    // Binned, mirrored by reversing the bins:
    // scipy.stats.mannwhitneyu(np.repeat([0,1,2,3],[6,2,1,0]), np.repeat([0,1,2,3],[3,5,0,2]), alternative='less', method='asymptotic').pvalue
    let t = mann_whitney_binned(&[0.0, 1.0, 2.0, 6.0], &[2.0, 0.0, 5.0, 3.0]).unwrap();
    close(t.p_value, 0.07135006634920518, 1e-9);
    // Sign test: scipy.stats.binomtest(7, 8, 0.5, alternative='greater').pvalue
    close(binom_test_greater(7, 8, 0.5).unwrap().p_value, 0.03515625, 1e-12);
}

fn throughput(c: Vec<f64>, b: Vec<f64>, requests: (u64, u64)) -> GateInput {
    let mean = |v: &[f64]| Some(v.iter().sum::<f64>() / v.len() as f64);
    GateInput {
        metric: "output_tokens_per_second".into(),
        kind: MetricKind::Gauge,
        quantile: 0.0,
        max_absolute: None,
        max_relative_increase: None,
        min_samples: 200,
        window_secs: 600.0,
        candidate: Side::Gauge { value: mean(&c), samples: c },
        baseline: Side::Gauge { value: mean(&b), samples: b },
        higher_is_better: true,
        min_absolute: Some(50.0),
        min_relative_decrease: Some(0.2),
        request_counts: Some(requests),
        candidate_only: false,
    }
}

#[test]
fn lower_throughput_fails_the_higher_is_better_gate() {
    let base: Vec<f64> = (0..20).map(|i| 100.0 + (i % 5) as f64).collect();
    let slow: Vec<f64> = base.iter().map(|v| v * 0.7).collect();
    let o = evaluate_gate(&throughput(slow, base.clone(), (5000, 5000)));
    assert_eq!(o.verdict, GateVerdict::Fail, "{o:?}");
    assert!(o.version_tied());
    let rel = o.checks.iter().find(|c| c.kind == "relative").unwrap();
    assert!(rel.exceeded && rel.supported);
    close(rel.limit, 102.0 * 0.8, 1e-9);
    // Equal arms: PASS with enough scrapes and requests.
    let o = evaluate_gate(&throughput(base.clone(), base.clone(), (5000, 5000)));
    assert_eq!(o.verdict, GateVerdict::Pass, "{o:?}");
    // A higher candidate is never a failure of a higher-is-better gate.
    let fast: Vec<f64> = base.iter().map(|v| v * 1.5).collect();
    assert_eq!(evaluate_gate(&throughput(fast, base.clone(), (5000, 5000))).verdict, GateVerdict::Pass);
    // Too few requests: INCONCLUSIVE, with the hint counted in requests.
    let o = evaluate_gate(&throughput(base.clone(), base.clone(), (20, 5000)));
    assert_eq!(o.verdict, GateVerdict::Inconclusive, "{o:?}");
    assert_eq!(o.more_samples, Some(180));
    assert!(o.message.contains("20 candidate / 5000 baseline requests"), "{}", o.message);
    // Below the absolute floor, sign-tested.
    let low: Vec<f64> = base.iter().map(|v| v * 0.4).collect();
    let o = evaluate_gate(&throughput(low, base, (5000, 5000)));
    let abs = o.checks.iter().find(|c| c.kind == "absolute").unwrap();
    assert!(abs.supported && abs.test.unwrap().method == "sign test (binomial)", "{o:?}");
}

#[test]
fn at_full_traffic_only_absolute_limits_judge_the_candidate_alone() {
    let empty = Side::Proportion { value: None, total: 0.0 };
    let alone = |c: Side| GateInput { candidate_only: true, ..error_gate(c, empty.clone()) };
    // 1% errors over 5000 requests, cap 2%: within, with the samples to say so.
    let o = evaluate_gate(&alone(prop(0.01, 5000.0)));
    assert_eq!(o.verdict, GateVerdict::Pass, "{o:?}");
    assert!(o.baseline.is_none() && o.baseline_samples == 0 && o.comparison.is_none());
    assert_eq!(
        o.checks.iter().map(|c| c.kind).collect::<Vec<_>>(),
        vec!["absolute"],
        "the relative limit needs a baseline"
    );
    assert!(o.message.contains("no concurrent baseline"), "{}", o.message);
    // Needed from the candidate's own rate: 1% → 2%, as with a 1% baseline.
    assert_eq!(o.needed, n_two_proportions(0.01, 0.02, ALPHA, POWER));
    // 8% against a 2% cap: a failure, but not one tied to the version.
    let o = evaluate_gate(&alone(prop(0.08, 5000.0)));
    assert_eq!(o.verdict, GateVerdict::Fail, "{o:?}");
    assert!(!o.version_tied());
    assert_eq!(classify(std::slice::from_ref(&o), 0, &Trend::default()), Situation::Unattributed);
    // Thin: INCONCLUSIVE, the hint counting the candidate only.
    let o = evaluate_gate(&alone(prop(0.0, 50.0)));
    assert_eq!(o.verdict, GateVerdict::Inconclusive, "{o:?}");
    assert!(
        o.message.contains("(50 candidate samples)") && o.message.contains("more candidate samples"),
        "{}",
        o.message
    );
    // Nothing from the candidate: NO DATA; the missing baseline is not.
    let o = evaluate_gate(&alone(empty.clone()));
    assert_eq!(o.verdict, GateVerdict::NoData);
    assert_eq!(o.message, "no samples for candidate over the window");
    // Relative limits only: nothing applies, never a pass.
    let mut g = alone(prop(0.01, 50_000.0));
    g.max_absolute = None;
    let o = evaluate_gate(&g);
    assert_eq!(o.verdict, GateVerdict::Inconclusive);
    assert!(o.message.contains("judged at the earlier steps"), "{}", o.message);
    // A histogram against maxAbsolute: quantile test on the candidate.
    let h = hist(&[(0.1, 4000.0), (0.2, 9000.0), (0.5, 9900.0), (1.0, 10000.0), (f64::INFINITY, 10000.0)]);
    let g = GateInput {
        metric: "ttft_p95_seconds".into(),
        kind: MetricKind::Histogram,
        quantile: 0.95,
        max_absolute: Some(1.0),
        max_relative_increase: Some(0.1),
        min_samples: 200,
        window_secs: 60.0,
        candidate: Side::Histogram { value: h.quantile(0.95), hist: h.clone() },
        baseline: Side::Histogram { value: None, hist: Histogram::default() },
        higher_is_better: false,
        min_absolute: None,
        min_relative_decrease: None,
        request_counts: None,
        candidate_only: true,
    };
    assert_eq!(evaluate_gate(&g).verdict, GateVerdict::Pass, "{:?}", evaluate_gate(&g));
    let o = evaluate_gate(&GateInput { max_absolute: Some(0.2), ..g });
    assert_eq!(o.verdict, GateVerdict::Fail, "{o:?}");
    assert_eq!(o.checks[0].test.unwrap().method, "quantile (binomial)");
}

#[test]
fn bad_proportions_from_an_override_are_undecided_not_a_panic() {
    // A "rate" of 1.5 (a wrong override query) used to give x > n.
    let o = evaluate_gate(&error_gate(prop(1.5, 5000.0), prop(0.01, 5000.0)));
    assert_eq!(o.verdict, GateVerdict::Inconclusive, "{o:?}");
    assert!(o.message.contains("no candidate-vs-baseline test"), "{}", o.message);
    // NaN gauge samples never reach a test.
    let mut g = throughput(vec![100.0; 20], vec![100.0; 20], (5000, 5000));
    g.candidate = Side::Gauge { value: Some(100.0), samples: vec![] };
    assert_eq!(evaluate_gate(&g).verdict, GateVerdict::NoData);
}

/// At a 100% step only the candidate's samples count: the hold names the
/// candidate, never "each side".
#[test]
fn hold_at_a_full_traffic_step_names_the_candidate() {
    let steady = Trend::default();
    let none = RollbackTarget::NotChecked;
    let a = decide(Situation::Undecided, false, true, &steady, &none, Some((40, 2.5)));
    assert!(
        a.precondition.contains("until the candidate has 40 more samples (≈ 2.5 more minutes"),
        "{}",
        a.precondition
    );
    let a = decide(Situation::Undecided, false, true, &steady, &none, Some((40, f64::INFINITY)));
    assert!(
        a.precondition.contains("40 more samples are needed and the candidate receives no traffic"),
        "{}",
        a.precondition
    );
    let a = decide(Situation::Undecided, false, false, &steady, &none, Some((40, 2.5)));
    assert!(a.precondition.contains("until each side has 40 more samples"), "{}", a.precondition);
    let a = decide(Situation::Undecided, false, false, &steady, &none, Some((40, f64::INFINITY)));
    assert!(a.precondition.contains("40 more samples per side are needed and one side receives no traffic"));
}

// ---- the decision card's parts, one by one --------------------------------

/// Each arm against its own previous window: a ratio only from a positive
/// earlier value and a finite current one.
#[test]
fn the_trend_is_each_arms_ratio_to_its_previous_window() {
    let t = Traffic {
        candidate_requests: Some(300.0),
        candidate_requests_before: Some(200.0),
        baseline_requests: Some(90.0),
        baseline_requests_before: Some(0.0),
        candidate_p95: Some(f64::INFINITY),
        candidate_p95_before: Some(1.0),
        baseline_p95: Some(0.5),
        baseline_p95_before: None,
        window_seconds: 600.0,
    };
    assert_eq!(
        t.trend(),
        Trend { candidate_rate: Some(1.5), baseline_rate: None, candidate_latency: None, baseline_latency: None }
    );
    let t = Traffic { candidate_p95: Some(0.6), candidate_p95_before: Some(0.4), ..t };
    assert_eq!(t.trend().candidate_latency, Some(0.6 / 0.4));
    assert_eq!(
        t.trend().describe(),
        "vs the previous window: request rate candidate ×1.50 / baseline unknown, P95 candidate ×1.50 / baseline unknown"
    );
    let table = t.table("version=\"v2\"", "version=\"v1\"");
    assert_eq!(
        table.rows,
        [
            ["candidate", "{version=\"v2\"}", "300", "30.0/min", "20.0/min", "0.600 s", "0.400 s"],
            ["baseline", "{version=\"v1\"}", "90", "9.0/min", "0.0/min", "0.500 s", "no data"],
        ]
    );
    assert_eq!(table.columns.len(), table.rows[0].len());
}

/// Load-driven needs both arms past the same threshold: rates up by half,
/// or both P95s up by a fifth; one arm, or an unknown one, is not load.
#[test]
fn load_is_both_arms_past_the_threshold() {
    let t =
        |cr, br, cl, bl| Trend { candidate_rate: cr, baseline_rate: br, candidate_latency: cl, baseline_latency: bl };
    assert!(t(Some(1.5), Some(1.5), None, None).load_driven());
    assert!(t(None, None, Some(1.2), Some(1.2)).load_driven());
    assert!(t(Some(1.0), Some(1.0), Some(1.3), Some(1.25)).load_driven());
    assert!(!t(Some(1.5), Some(1.49), Some(1.2), Some(1.19)).load_driven());
    assert!(!t(Some(3.0), None, None, Some(3.0)).load_driven());
    assert!(!Trend::default().load_driven());
}

/// Healthy only when there are gates and every one passed; a pass beside
/// an undecided gate is undecided.
#[test]
fn healthy_needs_every_gate_passed() {
    let pass = evaluate_gate(&error_gate(prop(0.01, 200_000.0), prop(0.01, 200_000.0)));
    let undecided = evaluate_gate(&error_gate(prop(0.01, 5000.0), prop(0.01, 5000.0)));
    assert_eq!((pass.verdict, undecided.verdict), (GateVerdict::Pass, GateVerdict::Inconclusive));
    let steady = Trend::default();
    assert_eq!(classify(&[pass.clone(), pass.clone()], 0, &steady), Situation::Healthy);
    assert_eq!(classify(&[pass, undecided], 0, &steady), Situation::Undecided);
}

/// The step's verdict reads only blocking (ERROR-severity) findings of the
/// gate and golden codes: a gate failure lowered to a warning by an
/// override, or an error of another code, does not fail the canary; no data
/// lowered to a warning is still no evidence (INCONCLUSIVE, the evidence
/// floor); no gate at all is INCONCLUSIVE below 100 % and NOT RUN at 100 %.
#[test]
fn the_canary_verdict_reads_blocking_findings_only() {
    use crate::diag::{Code, Diagnostic, Severity};
    use crate::report::Verdict;
    let pass = evaluate_gate(&error_gate(prop(0.01, 200_000.0), prop(0.01, 200_000.0)));
    let outcomes = std::slice::from_ref(&pass);
    let mut lowered = Diagnostic::new(Code::CanaryGateFailed, "gate `error_rate`: over the limit");
    lowered.severity = Severity::Warning;
    let other = Diagnostic::new(Code::RolloutIncomplete, "not a canary finding");
    assert_eq!(other.severity, Severity::Error);
    assert_eq!(canary_verdict(&[lowered.clone(), other], outcomes, false, false), Verdict::Pass);
    let mut unsure = Diagnostic::new(Code::CanaryNoData, "no data");
    unsure.severity = Severity::Warning;
    assert_eq!(canary_verdict(&[unsure.clone()], outcomes, false, false), Verdict::Inconclusive);
    unsure.severity = Severity::Error;
    assert_eq!(canary_verdict(&[unsure], outcomes, false, false), Verdict::Inconclusive);
    lowered.severity = Severity::Error;
    assert_eq!(canary_verdict(&[lowered], outcomes, false, false), Verdict::Fail);
    assert_eq!(canary_verdict(&[], &[], false, false), Verdict::Inconclusive);
    assert_eq!(canary_verdict(&[], &[], false, true), Verdict::NotRun);
    assert_eq!(canary_verdict(&[], outcomes, true, false), Verdict::Error);
}

/// The hint for an undecided gate: more samples per side and the minutes at
/// each arm's observed rate; none when the floor is already met.
#[test]
fn the_more_samples_hint_counts_and_times_what_is_short() {
    let o = evaluate_gate(&error_gate(prop(0.0, 1.0), prop(0.0, 19.0)));
    assert!(
        o.message
            .ends_with("; needs 304 more samples per side (≈ 3040.0 more minutes at the observed 0.1/1.9 per minute)"),
        "{}",
        o.message
    );
    // No sample size can be computed and the floor is met: no hint at all.
    let mut g = error_gate(prop(0.0, 50_000.0), prop(0.0, 50_000.0));
    g.max_absolute = None;
    let o = evaluate_gate(&g);
    assert_eq!((o.verdict, o.more_samples, o.more_minutes), (GateVerdict::Inconclusive, None, None));
    assert!(!o.message.contains("needs"), "{}", o.message);
    // ...and below the floor the floor is the target.
    let mut g = error_gate(prop(0.0, 150.0), prop(0.0, 120.0));
    g.max_absolute = None;
    let o = evaluate_gate(&g);
    assert_eq!((o.needed, o.more_samples), (None, Some(80)), "{o:?}");
    close(o.more_minutes.unwrap(), 80.0 / (120.0 / 10.0), 1e-9);
}

#[test]
fn p_values_are_printed_by_size() {
    assert_eq!(fmt_p(0.0), "< 1e-300");
    assert_eq!(fmt_p(2e-5), "2.0e-5");
    assert_eq!(fmt_p(1e-4), "0.0001");
    assert_eq!(fmt_p(0.5), "0.5000");
}

/// Gate values in their unit: a proportion in percent, `_seconds` in
/// seconds, a gauge's `_bytes` in bytes, anything else as a number.
#[test]
fn gate_values_are_printed_in_their_unit() {
    assert_eq!(fmt_value(MetricKind::Proportion, "error_rate", Some(0.0123)), "1.230%");
    assert_eq!(fmt_value(MetricKind::Histogram, "latency_seconds", Some(0.5)), "0.500 s");
    assert_eq!(fmt_value(MetricKind::Histogram, "output_tokens", Some(0.5)), "0.5");
    assert_eq!(fmt_value(MetricKind::Gauge, "gpu_memory_bytes", Some(2048.0)), crate::util::human_bytes(2048));
    assert_ne!(crate::util::human_bytes(2048), "2048");
    assert_eq!(fmt_value(MetricKind::Gauge, "queue_seconds", Some(2048.0)), "2048");
    assert_eq!(fmt_value(MetricKind::Proportion, "error_rate", None), "no data");
}

/// A gate that did not pass becomes one finding at its field, with both
/// arms (or the candidate alone at 100 %), the comparison's p-value, and
/// what would settle it.
#[test]
fn a_gate_finding_quotes_both_arms_and_what_would_settle_it() {
    let pass = evaluate_gate(&error_gate(prop(0.01, 200_000.0), prop(0.01, 200_000.0)));
    assert!(gate_diagnostic(0, &pass, "10m", false).is_none());
    let fail = evaluate_gate(&error_gate(prop(0.08, 5000.0), prop(0.01, 5000.0)));
    let d = gate_diagnostic(3, &fail, "10m", false).unwrap();
    assert_eq!(d.code, crate::diag::Code::CanaryGateFailed);
    assert_eq!(d.field.as_deref(), Some("spec.canary.gates[3]"));
    assert_eq!(d.message, format!("gate `error_rate`: {}", fail.message));
    assert_eq!(d.evidence[0], "candidate 8.000% (5000 samples), baseline 1.000% (5000 samples) over 10m");
    let t = fail.comparison.unwrap();
    assert_eq!(d.evidence[1], format!("candidate vs baseline: {} p={}", t.method, fmt_p(t.p_value)));
    assert!(d.help.is_empty(), "{d:?}");
    let d = gate_diagnostic(0, &fail, "10m", true).unwrap();
    assert_eq!(d.evidence[0], "candidate 8.000% (5000 samples) over 10m at 100% traffic; no concurrent baseline");
    let thin = evaluate_gate(&error_gate(prop(0.0, 1.0), prop(0.0, 19.0)));
    let d = gate_diagnostic(0, &thin, "10m", false).unwrap();
    assert_eq!(d.code, crate::diag::Code::CanaryGateInconclusive);
    assert_eq!(
        d.help,
        ["keep the current traffic step for ≈ 3040.0 more minutes (304 more samples per side), or raise the canary weight"]
    );
    // Minutes that cannot be told (an arm with no traffic) give no "≈ inf".
    let stalled = GateOutcome { more_minutes: Some(f64::INFINITY), ..thin };
    assert!(gate_diagnostic(0, &stalled, "10m", false).unwrap().help.is_empty());
    let none = evaluate_gate(&error_gate(Side::Proportion { value: None, total: 0.0 }, prop(0.01, 5000.0)));
    let d = gate_diagnostic(0, &none, "10m", false).unwrap();
    assert_eq!(d.code, crate::diag::Code::CanaryNoData);
    assert!(d.help[0].starts_with("check the selector"), "{d:?}");
}

/// One row per limit checked, saying whether the candidate is over it with
/// support, over it without, or within; a gate with no limit checked has
/// one row with its verdict.
#[test]
fn the_gate_table_has_a_row_per_limit() {
    let fail = evaluate_gate(&error_gate(prop(0.08, 5000.0), prop(0.01, 5000.0)));
    let t = gate_table(&fail);
    assert_eq!(t.rows.len(), 2);
    assert_eq!(t.rows[0][..4], ["error_rate (absolute)", "1.000%", "8.000%", "2.000%"]);
    assert_eq!(t.rows[1][..4], ["error_rate (relative)", "1.000%", "8.000%", "1.100%"]);
    for r in &t.rows {
        assert_eq!((r[5].as_str(), r[7].as_str()), ("5000 / 5000", "FAIL"), "{r:?}");
        assert!(r[4].ends_with(')'), "{r:?}");
    }
    assert_eq!(t.columns.len(), t.rows[0].len());
    let above = evaluate_gate(&error_gate(prop(0.03, 300.0), prop(0.02, 300.0)));
    assert!(gate_table(&above).rows.iter().any(|r| r[7] == "above, not significant"));
    let pass = evaluate_gate(&error_gate(prop(0.01, 200_000.0), prop(0.01, 200_000.0)));
    assert!(gate_table(&pass).rows.iter().all(|r| r[7] == "within"));
    let none = evaluate_gate(&error_gate(Side::Proportion { value: None, total: 0.0 }, prop(0.01, 5000.0)));
    let t = gate_table(&none);
    assert_eq!(t.rows.len(), 1);
    assert_eq!(t.rows[0][0], "error_rate");
    assert_eq!(t.rows[0][3], "—");
    assert_eq!(t.rows[0][7], none.verdict.to_string());
}

/// A golden failure quotes the first 300 characters of the output (by
/// characters), marks a cut, and points at the generation config when the
/// output hit max_tokens.
#[test]
fn a_golden_failure_quotes_the_output_and_how_it_stopped() {
    let long = "é".repeat(301);
    let d = golden_failed("s1", &["a".into(), "b".into()], &long, Some("length"), 200, 12);
    assert_eq!(d.message, "golden sample `s1`: a; b");
    assert_eq!(d.evidence[0], format!("output (301 chars): {}…", "é".repeat(300)));
    assert_eq!(d.evidence[1], "finish reason Some(\"length\"), HTTP 200, 12 ms");
    assert!(d.help[0].contains("max_tokens"), "{d:?}");
    let d = golden_failed("s1", &["a".into()], &"x".repeat(300), Some("stop"), 502, 3);
    assert_eq!(d.evidence[0], format!("output (300 chars): {}", "x".repeat(300)));
    assert!(d.help.is_empty());
}

// ---- the gate's arithmetic at its edges --------------------------------------

#[test]
fn histogram_counts_total_and_cdf_at_the_edges() {
    let h = hist(&[(0.1, 2.0), (0.5, 5.0), (f64::INFINITY, 6.0)]);
    assert_eq!(h.bin_counts(), [2.0, 3.0, 1.0]);
    assert_eq!(h.total(), 6.0);
    // Without +Inf the counts are not a whole window: no total.
    assert_eq!(hist(&[(0.1, 2.0), (0.5, 5.0)]).total(), 0.0);
    // A zero count is a count; a negative one spoils the histogram.
    assert_eq!(hist(&[(0.1, 0.0), (f64::INFINITY, 5.0)]).bounds.len(), 2);
    assert_eq!(hist(&[(0.1, -1.0), (f64::INFINITY, 5.0)]), Histogram::default());
    // CDF: linear inside a bucket, continuous at its bounds, +Inf mass above all.
    close(h.cdf(0.05), 1.0 / 6.0, 1e-12);
    close(h.cdf(0.1), 2.0 / 6.0, 1e-12);
    close(h.cdf(0.3), 3.5 / 6.0, 1e-12);
    close(h.cdf(100.0), 5.0 / 6.0, 1e-12);
    // A first bucket at 0 holds its mass at 0: none of it is below -0.5.
    let z = hist(&[(0.0, 2.0), (1.0, 4.0), (f64::INFINITY, 4.0)]);
    assert_eq!(z.cdf(-0.5), 0.0);
    close(z.cdf(0.0), 0.5, 1e-12);
    close(z.cdf(0.5), 0.75, 1e-12);
}

#[test]
fn sample_counts_are_whole_and_never_negative_or_infinite() {
    assert_eq!(prop(0.1, 199.6).samples(), 200);
    assert_eq!(prop(0.1, f64::INFINITY).samples(), 0);
    assert_eq!(prop(0.1, f64::NAN).samples(), 0);
    assert_eq!(prop(0.1, -5.0).samples(), 0);
    // Samples without a value, or a value without samples: no data.
    let o = evaluate_gate(&error_gate(Side::Proportion { value: None, total: 5000.0 }, prop(0.01, 5000.0)));
    assert_eq!(o.verdict, GateVerdict::NoData);
    let o = evaluate_gate(&error_gate(prop(0.01, 0.0), prop(0.01, 5000.0)));
    assert_eq!((o.verdict, o.message.as_str()), (GateVerdict::NoData, "no samples for candidate over the window"));
    // The same for the baseline, each half alone.
    let o = evaluate_gate(&error_gate(prop(0.01, 5000.0), Side::Proportion { value: None, total: 5000.0 }));
    assert_eq!((o.verdict, o.message.as_str()), (GateVerdict::NoData, "no samples for baseline over the window"));
    let o = evaluate_gate(&error_gate(prop(0.01, 5000.0), prop(0.01, 0.0)));
    assert_eq!(o.verdict, GateVerdict::NoData);
}

#[test]
fn verdict_words_and_numbers_as_printed() {
    let words: Vec<String> = [GateVerdict::Pass, GateVerdict::Inconclusive, GateVerdict::NoData, GateVerdict::Fail]
        .map(|v| v.to_string())
        .to_vec();
    assert_eq!(words, ["PASS", "INCONCLUSIVE", "NO DATA", "FAIL"]);
    for (v, s) in [
        (0.0, "0"),
        (1e6, "1.000e6"),
        (-2e6, "-2.000e6"),
        (999_999.0, "999999"),
        (100.0, "100"),
        (99.5, "99.5"),
        (12.345_67, "12.3457"),
        (1e-3, "0.001"),
        (9.99e-4, "9.990e-4"),
        (-0.25, "-0.25"),
    ] {
        assert_eq!(fmt_num(v), s, "{v}");
    }
}

/// A limit is crossed only beyond it: a candidate exactly at its limit has
/// not exceeded it, in either direction; a failure is the version's only
/// with p strictly below ALPHA.
#[test]
fn limits_are_crossed_strictly() {
    let o = evaluate_gate(&error_gate(prop(0.02, 100_000.0), prop(0.02, 100_000.0)));
    assert!(o.checks.iter().all(|c| !c.exceeded), "{o:?}");
    let g = throughput(vec![50.0; 30], vec![50.0; 30], (5000, 5000));
    let o = evaluate_gate(&g);
    assert!(o.checks.iter().any(|c| c.kind == "absolute" && !c.exceeded), "{o:?}");
    let mut tied = evaluate_gate(&error_gate(prop(0.08, 5000.0), prop(0.01, 5000.0)));
    assert!(tied.version_tied());
    tied.comparison = tied.comparison.map(|t| TestResult { p_value: ALPHA, ..t });
    assert!(!tied.version_tied());
}

/// The samples needed are never below canary.minSamples for a request
/// gate; a gauge's scrapes have no such floor.
#[test]
fn needed_samples_are_floored_at_min_samples_for_request_gates() {
    let mut g = error_gate(prop(0.0, 50_000.0), prop(0.0, 50_000.0));
    g.max_absolute = Some(0.5);
    g.max_relative_increase = None;
    let o = evaluate_gate(&g);
    assert_eq!(o.needed, Some(200), "{o:?}");
    let mut g = throughput(vec![100.0; 30], vec![100.0; 30], (5000, 5000));
    g.min_samples = 10_000;
    g.request_counts = None;
    let o = evaluate_gate(&g);
    assert!(o.needed.is_some_and(|n| n < 10_000), "{o:?}");
}

/// P(s·X > Y) against closed forms: X, Y uniform on [0, 1] gives
/// 1 − 1/(2s) for s ≥ 1. With half the mass in +Inf, X's share is read at
/// the highest finite bound and beats Y's finite half but not Y's own +Inf
/// share: s = 1 gives 1/8 (both finite) + 1/4.
#[test]
fn superiority_matches_closed_forms() {
    let u = hist(&[(1.0, 10.0), (f64::INFINITY, 10.0)]);
    close(u.superiority_scaled(1.0), 0.5, 1e-3);
    close(u.superiority_scaled(2.0), 0.75, 1e-3);
    close(u.superiority_scaled(4.0), 0.875, 1e-3);
    let tail = hist(&[(1.0, 5.0), (f64::INFINITY, 10.0)]);
    close(tail.superiority_scaled(1.0), 0.375, 1e-3);
    // s = 0.5: X's +Inf share sits at 1.0, scaled to 0.5, beating a quarter
    // of Y; the finite halves give 1/16.
    close(tail.superiority_scaled(0.5), 0.0625 + 0.125, 1e-3);
    // Mass in an empty middle bucket changes nothing.
    let gap = hist(&[(0.5, 5.0), (0.75, 5.0), (1.0, 10.0), (f64::INFINITY, 10.0)]);
    let same = hist(&[(0.5, 5.0), (1.0, 10.0), (f64::INFINITY, 10.0)]);
    close(gap.superiority_scaled(1.5), same.superiority_scaled(1.5), 1e-3);
    assert_eq!(hist(&[]).superiority_scaled(2.0), 0.5);
    // Every sample at -1 (a first bucket of zero width below 0): 2·(-1) is
    // never above -1, 0.5·(-1) always is. Integrating from 0 instead of the
    // bucket's own start put half the mass above -1.
    let at_minus_one = hist(&[(-1.0, 10.0), (f64::INFINITY, 10.0)]);
    close(at_minus_one.superiority_scaled(2.0), 0.0, 1e-9);
    close(at_minus_one.superiority_scaled(0.5), 1.0, 1e-9);
}

/// A success-rate gate (a proportion, higher is better) on 5000 requests per
/// arm, with only an absolute floor.
fn success_rate(candidate: f64, baseline: f64, floor: f64) -> GateInput {
    let mut g = error_gate(prop(candidate, 5000.0), prop(baseline, 5000.0));
    (g.higher_is_better, g.max_absolute, g.max_relative_increase, g.min_absolute) = (true, None, None, Some(floor));
    g
}

/// A memory-peak gate (a gauge, lower is better), scrapes only.
fn memory_peak(c: Vec<f64>, b: Vec<f64>, max_absolute: Option<f64>, max_relative_increase: Option<f64>) -> GateInput {
    let mut g = throughput(c, b, (5000, 5000));
    (g.higher_is_better, g.min_absolute, g.min_relative_decrease) = (false, None, None);
    (g.max_absolute, g.max_relative_increase, g.request_counts) = (max_absolute, max_relative_increase, None);
    g
}

/// The candidate-vs-baseline test looks for "candidate worse" in the gate's
/// direction, for proportions and gauges alike; at 100 % traffic there is
/// no baseline to compare with.
#[test]
fn the_comparison_faces_the_gates_direction() {
    let p = |o: &GateOutcome| o.comparison.map(|t| t.p_value).unwrap_or(f64::NAN);
    // Proportions, higher is better (a success rate).
    let success = |c: f64, b: f64| evaluate_gate(&success_rate(c, b, 0.5));
    assert!(p(&success(0.90, 0.99)) < 1e-6, "{:?}", success(0.90, 0.99));
    assert!(p(&success(0.99, 0.90)) > 0.5, "{:?}", success(0.99, 0.90));
    // Gauges, lower is better (a memory peak): larger candidate is worse.
    let peak = |c: Vec<f64>, b: Vec<f64>| evaluate_gate(&memory_peak(c, b, Some(1e9), None));
    let more = peak((0..30).map(|i| 200.0 + f64::from(i)).collect(), (0..30).map(|i| 100.0 + f64::from(i)).collect());
    assert!(more.comparison.is_some(), "{more:?}");
    assert!(p(&more) < 1e-6, "{more:?}");
    let less = peak((0..30).map(|i| 100.0 + f64::from(i)).collect(), (0..30).map(|i| 200.0 + f64::from(i)).collect());
    assert!(p(&less) > 0.5, "{less:?}");
    // Alone: no comparison at all.
    let mut g = error_gate(prop(0.08, 5000.0), prop(0.01, 5000.0));
    g.candidate_only = true;
    assert!(evaluate_gate(&g).comparison.is_none());
}

#[test]
fn significant_is_strictly_below_alpha() {
    let t = |p_value| TestResult { method: "m", statistic: 0.0, p_value };
    assert!(t(ALPHA - 1e-12).significant());
    assert!(!t(ALPHA).significant());
    assert!(!t(f64::NAN).significant());
}

/// Each limit's own test, wired to the gate's direction and kind: a
/// success rate's failures against 1 − floor; a latency quantile's share
/// above the limit against 1 − q; throughput's samples strictly below the
/// floor; a gauge peak over its absolute limit is a measurement (no test),
/// anything else needs its test's support.
#[test]
fn each_limit_check_uses_its_own_test() {
    let check = |o: &GateOutcome, kind: &str| o.checks.iter().find(|c| c.kind == kind).cloned().unwrap();
    // A success rate 0.90 against a floor of 0.95: 500 failures in 5000
    // where 5 % (250) are allowed.
    let success = |c: f64| evaluate_gate(&success_rate(c, 0.99, 0.95));
    let o = success(0.90);
    let c = check(&o, "absolute");
    assert!(c.exceeded && c.supported, "{o:?}");
    let want = binom_test_greater(500, 5000, 0.05).unwrap().p_value;
    close(c.test.unwrap().p_value, want, want * 1e-9);
    // Sample size to tell 1 % failures from 5 %, mirrored.
    assert_eq!(o.needed, n_two_proportions(0.01, 0.05, ALPHA, POWER).map(|n| n.max(200)));
    assert!(o.needed.is_some());
    assert!(!check(&success(0.97), "absolute").exceeded);
    // Latency: 20 % of 1000 samples above 0.5 s, limit on the P95.
    let lat = |c: Histogram| {
        let b = hist(&[(0.25, 990.0), (0.5, 1000.0), (f64::INFINITY, 1000.0)]);
        let g = GateInput {
            metric: "p95_latency_seconds".into(),
            kind: MetricKind::Histogram,
            quantile: 0.95,
            max_absolute: Some(0.5),
            max_relative_increase: None,
            min_samples: 200,
            window_secs: 600.0,
            candidate: Side::Histogram { value: Some(0.9), hist: c },
            baseline: Side::Histogram { value: Some(0.25), hist: b },
            higher_is_better: false,
            min_absolute: None,
            min_relative_decrease: None,
            request_counts: None,
            candidate_only: false,
        };
        evaluate_gate(&g)
    };
    let o = lat(hist(&[(0.25, 500.0), (0.5, 800.0), (1.0, 1000.0), (f64::INFINITY, 1000.0)]));
    let c = check(&o, "absolute");
    let want = binom_test_greater(200, 1000, 0.05).unwrap().p_value;
    close(c.test.unwrap().p_value, want, want * 1e-9);
    assert!(c.supported && o.verdict == GateVerdict::Fail, "{o:?}");
    // Throughput exactly at its floor: no sample is below it.
    let g = throughput(vec![50.0; 30], vec![100.0; 30], (5000, 5000));
    let c = check(&evaluate_gate(&g), "absolute");
    assert_eq!(c.test.unwrap().p_value, 1.0);
    // Throughput below its floor on a few mixed samples: the sign test does
    // not support it, so the gate cannot fail on it.
    let g = throughput(vec![40.0, 60.0, 45.0, 55.0, 48.0], vec![100.0; 5], (5000, 5000));
    let o = evaluate_gate(&g);
    let c = check(&o, "absolute");
    assert!(c.exceeded && !c.supported, "{o:?}");
    // A hib gauge's needed sample size: from the mirrored superiority at the
    // tighter floor (here 0.8 × the baseline's mean, above min_absolute); a
    // gauge's scrapes have no minSamples floor.
    let spread: Vec<f64> = (0..30).map(|i| 60.0 + 3.0 * f64::from(i)).collect();
    let mean = spread.iter().sum::<f64>() / 30.0;
    let o = evaluate_gate(&throughput(spread.clone(), spread.clone(), (5000, 5000)));
    let sup = superiority_scaled_samples(&spread, 0.8);
    assert!(sup > 0.0 && sup < 0.5, "{sup}");
    assert_eq!(o.needed, n_mann_whitney(1.0 - sup, ALPHA, POWER), "{o:?} (mean {mean})");
    assert!(o.needed.is_some());
    // A memory peak over its absolute limit is measured, not tested.
    let peak =
        |c: Vec<f64>, b: Vec<f64>, abs: Option<f64>, rel: Option<f64>| evaluate_gate(&memory_peak(c, b, abs, rel));
    let o = peak(vec![120.0; 5], vec![100.0; 5], Some(110.0), None);
    let c = check(&o, "absolute");
    assert!(c.test.is_none() && c.supported && o.verdict == GateVerdict::Fail, "{o:?}");
    // ...but over its relative limit it needs the comparison's support.
    let o = peak(vec![112.0, 95.0, 118.0], vec![100.0, 104.0, 98.0], None, Some(0.05));
    let c = check(&o, "relative");
    assert!(c.exceeded && !c.supported && o.verdict != GateVerdict::Fail, "{o:?}");
}

/// canary.minSamples counts requests for a gate that knows them: exactly
/// the minimum is enough.
#[test]
fn exactly_min_samples_requests_is_not_below_it() {
    let o = evaluate_gate(&throughput(vec![100.0; 30], vec![100.0; 30], (200, 200)));
    assert!(!o.message.contains("below canary.minSamples"), "{}", o.message);
    let o = evaluate_gate(&throughput(vec![100.0; 30], vec![100.0; 30], (199, 200)));
    assert!(o.message.contains("below canary.minSamples 200 (199 candidate / 200 baseline requests)"), "{}", o.message);
}

/// The gate's message says what decided it: the limits exceeded with
/// support, the samples it passed with, or each reason it could not decide
/// (below minSamples per arm, above a limit without support, fewer samples
/// than the effect needs), never a reason that does not hold.
#[test]
fn the_gate_message_gives_the_reasons_that_hold() {
    let fail = evaluate_gate(&error_gate(prop(0.08, 5000.0), prop(0.01, 5000.0)));
    assert!(
        fail.message.starts_with("candidate exceeds the absolute limit 0.02: candidate 0.08 (p="),
        "{}",
        fail.message
    );
    assert!(fail.message.contains("; relative limit 0.011: candidate 0.08 (p="), "{}", fail.message);
    let pass = evaluate_gate(&error_gate(prop(0.01, 200_000.0), prop(0.01, 200_000.0)));
    assert_eq!(
        pass.message,
        format!("candidate 0.01 within limits with 200000/200000 samples (needed {})", pass.needed.unwrap())
    );
    let mut g = error_gate(prop(0.01, 200_000.0), prop(0.0, 0.0));
    g.candidate_only = true;
    let alone = evaluate_gate(&g);
    assert_eq!(alone.verdict, GateVerdict::Pass, "{alone:?}");
    assert_eq!(
        alone.message,
        format!(
            "candidate 0.01 within its absolute limit with 200000 samples (needed {}); no concurrent baseline at a 100% step",
            alone.needed.unwrap()
        )
    );
    // Alone, the baseline's requests do not count towards minSamples.
    let mut g = throughput(vec![100.0; 30], vec![], (5000, 0));
    g.candidate_only = true;
    assert!(!evaluate_gate(&g).message.contains("minSamples"));
    // Each arm is held to minSamples, requests or samples.
    let o = evaluate_gate(&throughput(vec![100.0; 30], vec![100.0; 30], (200, 199)));
    assert!(o.message.contains("below canary.minSamples 200 (200 candidate / 199 baseline requests)"), "{}", o.message);
    let o = evaluate_gate(&error_gate(prop(0.0, 200.0), prop(0.0, 199.0)));
    assert!(
        o.message.starts_with("below canary.minSamples 200 (200 candidate / 199 baseline samples)"),
        "{}",
        o.message
    );
    let o = evaluate_gate(&error_gate(prop(0.0, 200.0), prop(0.0, 5000.0)));
    assert!(!o.message.contains("minSamples"), "{}", o.message);
    let o = evaluate_gate(&error_gate(prop(0.0, 5000.0), prop(0.0, 200.0)));
    assert!(!o.message.contains("minSamples"), "{}", o.message);
    // Enough on one arm only is not enough: the shortfall is per side.
    let o = evaluate_gate(&error_gate(prop(0.01, 200_000.0), prop(0.01, 5000.0)));
    assert_eq!(o.verdict, GateVerdict::Inconclusive);
    assert!(o.message.contains("200000/5000 samples are fewer than the"), "{}", o.message);
    // Below minSamples, the power shortfall is not said a second time.
    let o = evaluate_gate(&error_gate(prop(0.0, 1.0), prop(0.0, 19.0)));
    assert!(!o.message.contains("are fewer than"), "{}", o.message);
    // With no sample size there is no shortfall to state.
    let mut g = error_gate(prop(0.0, 50_000.0), prop(0.0, 50_000.0));
    g.max_absolute = None;
    assert!(!evaluate_gate(&g).message.contains("are fewer than"));
    // Above a limit without support: said, with the level.
    let above = evaluate_gate(&error_gate(prop(0.03, 300.0), prop(0.02, 300.0)));
    assert!(above.message.contains("but not significantly (p ≥ 0.05)"), "{}", above.message);
}

/// A throughput gate with its requests in hand but too few scrapes for the
/// effect counts its shortfall in samples, not requests.
#[test]
fn enough_requests_but_few_samples_asks_for_samples() {
    let spread: Vec<f64> = (0..5).map(|i| 60.0 + 20.0 * f64::from(i)).collect();
    let o = evaluate_gate(&throughput(spread.clone(), spread, (5000, 5000)));
    assert_eq!(o.verdict, GateVerdict::Inconclusive, "{o:?}");
    let needed = o.needed.expect("a sample size");
    assert!(needed > 5, "{o:?}");
    assert_eq!(o.more_samples, Some(needed - 5), "{o:?}");
    assert!(o.message.contains(&format!("needs {} more samples per side", needed - 5)), "{}", o.message);
}

/// The exact value of the bucket model's P(s·X > Y): each bucket's mass is
/// uniform between its start and its bound (an atom when those meet, at the
/// highest finite bound for +Inf), so E[F(s·X)] over a bucket is the mean of
/// the piecewise-linear `cdf` over the scaled interval, integrated piece by
/// piece between its own breakpoints (exact: linear on each piece). Returns
/// the value and the midpoint rule's worst-case error for that layout.
fn exact_superiority(h: &Histogram, s: f64, steps: f64) -> (f64, f64) {
    let total = h.total();
    // histogram_quantile's model: the first bucket starts at 0, or at its own
    // bound when that is not above 0.
    let first = h.bounds[0].min(0.0);
    let breaks: Vec<f64> = std::iter::once(first).chain(h.bounds.iter().copied().filter(|b| b.is_finite())).collect();
    let mean_cdf = |a: f64, b: f64| {
        let mut pts: Vec<f64> = breaks.iter().copied().filter(|p| *p > a && *p < b).chain([a, b]).collect();
        pts.sort_by(f64::total_cmp);
        let area: f64 = pts.windows(2).map(|w| (w[1] - w[0]) * h.cdf((w[0] + w[1]) / 2.0)).sum();
        area / (b - a)
    };
    let (mut value, mut err, mut lo, mut below) = (0.0, 0.0, first, 0.0);
    for (le, c) in h.bounds.iter().zip(&h.cumulative) {
        let w = (c - below) / total;
        if le.is_infinite() || *le == lo {
            value += w * h.cdf(s * lo);
        } else {
            value += w * mean_cdf(s * lo, s * le);
            // The midpoint rule on a monotone function errs by at most the
            // function's rise over the number of steps.
            err += w * (h.cdf(s * le) - h.cdf(s * lo)) / steps;
        }
        below = *c;
        lo = *le;
    }
    (value, err)
}

/// Random bucket layouts: a first bound below, at or above 0, ascending
/// bounds after it, any counts (empty buckets included), mass in +Inf or not.
fn bucket_layouts() -> impl proptest::strategy::Strategy<Value = Vec<(f64, f64)>> {
    use proptest::prelude::*;
    (-4.0f64..4.0, prop::collection::vec((0.01f64..3.0, 0u32..50), 1..10), 0u32..20).prop_filter_map(
        "no samples",
        |(first, steps, inf)| {
            let mut pairs = Vec::new();
            let (mut le, mut cum) = (first, 0.0);
            for (i, (gap, n)) in steps.into_iter().enumerate() {
                if i > 0 {
                    le += gap;
                }
                cum += f64::from(n);
                pairs.push((le, cum));
            }
            pairs.push((f64::INFINITY, cum + f64::from(inf)));
            (cum + f64::from(inf) > 0.0).then_some(pairs)
        },
    )
}

proptest::proptest! {
    #![proptest_config(crate::util::prop_config(2_000))]

    /// `superiority_scaled` against the model's exact integral, within the
    /// midpoint rule's own bound, on every layout: a first bucket at or below
    /// 0 (where integrating from 0 instead of the bucket's start was wrong),
    /// empty buckets, and +Inf mass.
    #[test]
    fn superiority_is_the_bucket_models_integral(pairs in bucket_layouts(), s in 0.05f64..6.0) {
        let h = hist(&pairs);
        let (exact, err) = exact_superiority(&h, s, 64.0);
        let got = h.superiority_scaled(s);
        proptest::prop_assert!((got - exact).abs() <= err + 1e-9, "{got} vs {exact} (bound {err:e}) for {pairs:?} at s = {s}");
        proptest::prop_assert!((0.0..=1.0).contains(&got));
    }
}

// Generators for the statistics, each held to an oracle computed another
// way: pairs counted one by one instead of ranks merged, exact integer
// binomial sums instead of the pmf recurrence, bins expanded into raw
// samples. The class they cover: a p-value or statistic that is wrong on
// inputs no hard-coded scipy value happens to sit on (ties, a single bin,
// fractional counts from Prometheus' extrapolating `increase`).

/// U of x over y counted pair by pair (ties count half), and the tie term
/// from each distinct value's multiplicity in both arms together.
fn brute_u(x: &[f64], y: &[f64]) -> (f64, f64) {
    let mut u = 0.0;
    for a in x {
        for b in y {
            u += if a > b {
                1.0
            } else if a == b {
                0.5
            } else {
                0.0
            };
        }
    }
    let mut all: Vec<f64> = x.iter().chain(y).copied().collect();
    all.sort_by(f64::total_cmp);
    let mut tie = 0.0;
    for group in all.chunk_by(|a, b| a == b) {
        let t = group.len() as f64;
        tie += t * t * t - t;
    }
    (u, tie)
}

/// scipy's asymptotic one-sided p for U (continuity-corrected, tie-corrected).
fn asymptotic_p(u: f64, n1: f64, n2: f64, tie: f64) -> f64 {
    let n = n1 + n2;
    let var = n1 * n2 / 12.0 * ((n + 1.0) - tie / (n * (n - 1.0)));
    if var.is_nan() || var <= 0.0 {
        return 1.0;
    }
    norm_sf((u - n1 * n2 / 2.0 - 0.5) / var.sqrt())
}

fn choose(n: u64, k: u64) -> u128 {
    (0..k.min(n - k)).fold(1u128, |acc, i| acc * u128::from(n - i) / u128::from(i + 1))
}

/// P(X >= x1) for X ~ Hypergeom(n1 + n2, x1 + x2, n1), every term summed exactly.
fn brute_fisher(x1: u64, n1: u64, x2: u64, n2: u64) -> f64 {
    let (k, total) = (x1 + x2, n1 + n2);
    let num: u128 = (x1..=k.min(n1)).filter(|a| k - a <= n2).map(|a| choose(k, a) * choose(total - k, n1 - a)).sum();
    num as f64 / choose(total, n1) as f64
}

fn brute_binomial(k: u64, n: u64, p: f64) -> f64 {
    (k..=n).map(|i| choose(n, i) as f64 * p.powi(i as i32) * (1.0 - p).powi((n - i) as i32)).sum()
}

fn small_samples() -> impl proptest::strategy::Strategy<Value = Vec<f64>> {
    // Few distinct values, so ties are the rule rather than the exception.
    proptest::collection::vec((0u8..8).prop_map(|v| f64::from(v) * 0.5), 1..25)
}

use proptest::prelude::Strategy as _;

proptest::proptest! {
    #![proptest_config(crate::util::prop_config(1_000))]

    #[test]
    fn mann_whitney_is_pairs_counted_one_by_one(x in small_samples(), y in small_samples()) {
        let (u, tie) = brute_u(&x, &y);
        let (n1, n2) = (x.len() as f64, y.len() as f64);
        let t = mann_whitney_u(&x, &y).expect("finite, non-empty arms");
        proptest::prop_assert_eq!(t.statistic, u);
        let want = asymptotic_p(u, n1, n2, tie);
        proptest::prop_assert!((t.p_value - want).abs() <= 1e-12, "{} vs {want}", t.p_value);
        // The other direction is the same test with the arms swapped.
        let less = mann_whitney_u_less(&x, &y).expect("finite, non-empty arms");
        proptest::prop_assert_eq!(less.statistic, u);
        let swapped = mann_whitney_u(&y, &x).expect("finite, non-empty arms");
        proptest::prop_assert!((less.p_value - swapped.p_value).abs() <= 1e-12, "{} vs {}", less.p_value, swapped.p_value);
    }

    /// Binned counts are the raw test on bin-rounded values.
    #[test]
    fn binned_mann_whitney_is_the_raw_test_on_its_bins(
        bins in proptest::collection::vec((0u8..6, 0u8..6), 1..9)
    ) {
        let (cx, cy): (Vec<f64>, Vec<f64>) = bins.iter().map(|(a, b)| (f64::from(*a), f64::from(*b))).unzip();
        let expand = |c: &[f64]| -> Vec<f64> {
            c.iter().enumerate().flat_map(|(i, n)| std::iter::repeat_n(i as f64, *n as usize)).collect()
        };
        let (x, y) = (expand(&cx), expand(&cy));
        let binned = mann_whitney_binned(&cx, &cy);
        proptest::prop_assert_eq!(binned.is_some(), !x.is_empty() && !y.is_empty());
        if let (Some(b), Some(raw)) = (binned, mann_whitney_u(&x, &y)) {
            proptest::prop_assert!((b.statistic - raw.statistic).abs() <= 1e-9, "{} vs {}", b.statistic, raw.statistic);
            proptest::prop_assert!((b.p_value - raw.p_value).abs() <= 1e-12, "{} vs {}", b.p_value, raw.p_value);
        }
    }

    /// Prometheus' `increase` extrapolates, so bin counts are fractional;
    /// everything in one bin is no evidence of a shift however the
    /// variance rounds (it can round below zero, or divide 0 by 0 when the
    /// arms hold one sample between them).
    #[test]
    fn one_bin_of_fractional_counts_is_no_evidence(a in 0.01f64..1e6, b in 0.01f64..1e6, bins in 1usize..5, at in 0usize..5) {
        let at = at % bins;
        let (mut cx, mut cy) = (vec![0.0; bins], vec![0.0; bins]);
        cx[at] = a;
        cy[at] = b;
        let t = mann_whitney_binned(&cx, &cy).expect("both arms hold samples");
        proptest::prop_assert_eq!(t.p_value, 1.0, "{:?} {:?}", cx, cy);
    }

    #[test]
    fn fisher_is_the_exact_hypergeometric_tail(n1 in 1u64..40, n2 in 1u64..40, f1 in 0.0f64..=1.0, f2 in 0.0f64..=1.0) {
        let (x1, x2) = ((n1 as f64 * f1) as u64, (n2 as f64 * f2) as u64);
        let t = fisher_exact_greater(x1, n1, x2, n2).expect("valid table");
        let want = brute_fisher(x1, n1, x2, n2);
        // scipy's statistic: the sample odds ratio (a/b)/(c/d), inf or NaN on a zero cell.
        let (a, b, c, d) = (x1 as f64, (n1 - x1) as f64, x2 as f64, (n2 - x2) as f64);
        let odds = (a / b) / (c / d);
        proptest::prop_assert!(t.statistic == odds || (t.statistic.is_nan() && odds.is_nan()) || ((t.statistic - odds) / odds).abs() < 1e-12, "odds {} vs {odds}", t.statistic);
        proptest::prop_assert!((t.p_value - want).abs() <= 1e-9 * want.max(1e-300) + 1e-15, "{} vs {want} for {x1}/{n1} vs {x2}/{n2}", t.p_value);
        // Cochran's rule decided in integers: an expected cell below 5 is
        // n_row * n_col < 5 * n.
        let (n, events) = (n1 + n2, x1 + x2);
        let small = [n1 * events, n1 * (n - events), n2 * events, n2 * (n - events)].iter().any(|c| *c < 5 * n);
        let chosen = proportion_test(x1, n1, x2, n2).expect("valid table");
        let other = two_proportion_z(x1 as f64, n1 as f64, x2 as f64, n2 as f64).expect("valid counts");
        let want = if small { t } else { other };
        // Compared field by field: the odds ratio is NaN on a 0/0 table.
        proptest::prop_assert_eq!((chosen.method, chosen.p_value), (want.method, want.p_value));
        proptest::prop_assert_eq!(chosen.statistic.to_bits(), want.statistic.to_bits());
    }

    #[test]
    fn binomial_is_the_exact_upper_tail(n in 1u64..60, f in 0.0f64..=1.2, p in 0.0f64..=1.0) {
        let k = (n as f64 * f) as u64;
        let t = binom_test_greater(k, n, p).expect("p in [0, 1], n > 0");
        let want = if k > n { 0.0 } else { brute_binomial(k, n, p) };
        proptest::prop_assert!((t.p_value - want).abs() <= 1e-9, "{} vs {want} for {k}/{n} at {p}", t.p_value);
        proptest::prop_assert_eq!(t.statistic, k as f64);
    }

    /// The sample sizes are the smallest that reach the power: one fewer
    /// falls short.
    #[test]
    fn sample_sizes_are_the_smallest_with_the_power(p0 in 0.001f64..0.5, lift in 0.001f64..0.4, p_sup in 0.51f64..1.0) {
        let p1 = (p0 + lift).min(0.999);
        let (za, zb) = (norm_ppf(1.0 - ALPHA), norm_ppf(POWER));
        let n = n_two_proportions(p0, p1, ALPHA, POWER).expect("an effect to detect") as f64;
        let pbar = (p0 + p1) / 2.0;
        // Power of the one-sided test with m per arm (Fleiss, as documented).
        let power = |m: f64| {
            norm_sf(-(((p1 - p0) * m.sqrt() - za * (2.0 * pbar * (1.0 - pbar)).sqrt()) / (p0 * (1.0 - p0) + p1 * (1.0 - p1)).sqrt()))
        };
        proptest::prop_assert!(power(n) >= POWER - 1e-9, "power {} at {n}", power(n));
        proptest::prop_assert!(n <= 1.0 || power(n - 1.0) < POWER + 1e-9, "power {} at {}", power(n - 1.0), n - 1.0);
        let m = n_mann_whitney(p_sup, ALPHA, POWER).expect("an effect to detect") as f64;
        let d = p_sup - 0.5;
        proptest::prop_assert!(6.0 * d * d * m >= (za + zb).powi(2) * (1.0 - 1e-12));
        proptest::prop_assert!(m <= 1.0 || 6.0 * d * d * (m - 1.0) < (za + zb).powi(2) * (1.0 + 1e-12));
    }

    #[test]
    fn superiority_of_samples_is_pairs_counted_one_by_one(x in small_samples(), s in 0.2f64..3.0) {
        let n = x.len() as f64;
        let mut want = 0.0;
        for a in &x {
            for b in &x {
                let v = s * a;
                want += if v > *b { 1.0 } else if v == *b { 0.5 } else { 0.0 };
            }
        }
        let got = superiority_scaled_samples(&x, s);
        proptest::prop_assert!((got - want / (n * n)).abs() <= 1e-12, "{got} vs {}", want / (n * n));
    }
}

#[test]
fn cochrans_rule_and_the_binomial_tail_at_their_bounds() {
    // 10/20 events: every expected cell is exactly 5, not below it: z.
    assert_eq!(proportion_test(5, 10, 5, 10).map(|t| t.method), Some("two-proportion z"));
    assert_eq!(proportion_test(4, 10, 5, 10).map(|t| t.method), Some("Fisher exact"));
    // P(X >= n) is p^n, not 0: k = n is still inside the support.
    let t = binom_test_greater(8, 8, 0.5).expect("a valid test");
    close(t.p_value, 0.5f64.powi(8), 1e-15);
    assert_eq!(binom_test_greater(9, 8, 0.5).map(|t| t.p_value), Some(0.0));
}

/// The way back before verify: anything `checks::rollback` finds is the
/// reason it is unusable (with its path when declared); a target that
/// loaded with nothing against it is verified next (none).
#[test]
fn the_rollback_target_is_unusable_for_the_first_reason_found() {
    use crate::checks::rollback::RollbackStatus;
    let l = crate::bundle::example();
    let recorded = l.bundle.spec.rollback.as_ref().unwrap().release_digest.clone();
    let path = "../v1/release.yaml".to_string();
    let resolved = |digest: &str| RollbackStatus::Resolved { path: path.clone(), digest: digest.into() };
    assert_eq!(rollback_unusable(&l, &resolved(&recorded)), None);
    let unusable = |s: &RollbackStatus| match rollback_unusable(&l, s) {
        Some(RollbackTarget::Unusable { path, reason }) => (path, reason),
        other => panic!("{other:?}"),
    };
    assert_eq!(unusable(&RollbackStatus::NotDeclared), (None, "the bundle declares no spec.rollback".into()));
    let (p, why) = unusable(&RollbackStatus::Unreadable { path: path.clone(), error: "line 3: bad".into() });
    assert_eq!((p.as_deref(), why.as_str()), (Some(path.as_str()), "it does not load: line 3: bad"));
    let (_, why) = unusable(&RollbackStatus::Escapes { path: path.clone(), root: "/repo".into() });
    assert!(why.starts_with("it does not load: `../v1/release.yaml` resolves outside /repo"), "{why}");
    let (p, why) = unusable(&resolved("sha256:other"));
    assert_eq!(p.as_deref(), Some(path.as_str()));
    assert_eq!(why, format!("it hashes to sha256:other but spec.rollback.releaseDigest records {recorded}"));
}

/// After verify: a PASS is the evidence for the rollback; anything else
/// is the reason it is unusable, with up to three blocking findings.
#[test]
fn a_verified_rollback_target_carries_its_evidence_or_why_not() {
    use crate::diag::{Code, Diagnostic, Severity};
    use crate::report::{StepReport, Verdict};
    let target = crate::bundle::example();
    let mut v = StepReport::new("verify", "v1");
    v.summary = "3 artifact(s) match".into();
    assert_eq!(
        rollback_verified("../v1/release.yaml", &target, &v),
        RollbackTarget::Verified {
            path: "../v1/release.yaml".into(),
            version: target.bundle.metadata.version.clone(),
            digest: target.digest.clone(),
            evidence: "3 artifact(s) match".into(),
        }
    );
    v.verdict = Verdict::Fail;
    v.summary = "1 artifact differs".into();
    let finding = |n: usize| Diagnostic::new(Code::CanaryGateFailed, format!("finding {n}"));
    let mut quiet = finding(0);
    quiet.severity = Severity::Warning;
    v.diagnostics = vec![quiet, finding(1), finding(2), finding(3), finding(4)];
    let code = Code::CanaryGateFailed;
    assert_eq!(
        rollback_verified("../v1/release.yaml", &target, &v),
        RollbackTarget::Unusable {
            path: Some("../v1/release.yaml".into()),
            reason: format!("verify FAIL: 1 artifact differs ({code} finding 1; {code} finding 2; {code} finding 3)"),
        }
    );
    v.diagnostics.clear();
    v.verdict = Verdict::Error;
    let RollbackTarget::Unusable { reason, .. } = rollback_verified("p", &target, &v) else { panic!() };
    assert_eq!(reason, "verify ERROR: 1 artifact differs");
}
