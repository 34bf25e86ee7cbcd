//! `madu`: forecast-driven provisioning with a fixed capacity per GPU:
//! `workers = ceil(max forecast over the next window / capacity)`. The capacity is a
//! constant samples/s per GPU; by default the lowest per-GPU rate of the offline profile (a
//! conservative constant that holds at every profiled size), or `capacity=` in the spec.
//! No stabilisation; no decision while a rescale is in progress, nor within an optional
//! cooldown after one (`cooldown_min`, [`super::Cooldown`], our addition).

use super::{forecaster, num, Autoscaler, Cooldown, OnlineView};
use crate::{param, PolicyDoc, PolicySpec, SpecError};
use dlsim_engine::SimTime;
use dlsim_model::online::forecast::Forecaster;

pub struct Madu {
    spec: String,
    forecaster: Forecaster,
    capacity: Option<f64>,
    window_min: Option<usize>,
    cooldown: Cooldown,
}

/// `madu`'s parameters (`dlsim policies`).
pub const DOC: PolicyDoc = PolicyDoc {
    name: "madu",
    summary: "forecast-driven provisioning with a fixed capacity per GPU: ceil(max forecast over a window / capacity)",
    params: &[
        param("forecaster", "oracle|seasonal_naive|holt_winters", "holt_winters", "traffic forecaster (oracle: the true future rate, labelled in outputs)"),
        param("capacity", "number > 0", "-", "samples/s per GPU (default: the lowest per-GPU rate of the offline profile)"),
        param("window_min", "number in [1, 1440]", "-", "forecast window (minutes; default: the time a rescale takes)"),
        super::COOLDOWN_PARAM,
    ],
};

/// This policy's registry entry (`crate::autoscale::AUTOSCALERS`): its documentation and its builder.
pub const POLICY: crate::Registered<dyn dlsim_model::policy::Autoscaler> = crate::Registered {
    doc: &DOC,
    build: |spec| Ok(Box::new(Madu::from_spec(spec)?)),
};

impl Madu {
    pub fn from_spec(s: &PolicySpec) -> Result<Self, SpecError> {
        s.only(&DOC.param_names())?;
        let capacity = match s.params.get("capacity") {
            Some(_) => Some(num(s, "capacity", 1.0, 1e-9, 1e15)?),
            None => None,
        };
        let window_min = match s.params.get("window_min") {
            Some(_) => Some(num(s, "window_min", 10.0, 1.0, 1440.0)? as usize),
            None => None,
        };
        Ok(Madu {
            spec: s.canonical(),
            forecaster: Forecaster::new(forecaster(s)?),
            capacity,
            window_min,
            cooldown: Cooldown::from_spec(s)?,
        })
    }
}

impl Autoscaler for Madu {
    fn name(&self) -> String {
        self.spec.clone()
    }
    fn interval(&self) -> SimTime {
        SimTime::from_secs(60)
    }
    fn decide(&mut self, view: &OnlineView) -> Option<u32> {
        if self.capacity.is_none() {
            let per_gpu = view
                .profile
                .iter()
                .map(|p| p.sps / f64::from(p.workers))
                .fold(f64::INFINITY, f64::min);
            self.capacity = Some(per_gpu);
        }
        if !self.cooldown.may_act(view) {
            return None;
        }
        let window = self
            .window_min
            .unwrap_or((view.rescale_s / 60.0).ceil() as usize)
            + 1;
        let now = view.now_minute();
        let future = view.oracle_future(now, now + window);
        let fc = self.forecaster.forecast(view.minute_rates, window, future);
        let peak = fc.iter().copied().fold(0.0, f64::max);
        let cap = self.capacity.expect("set above");
        Some(((peak / cap).ceil() as u32).clamp(1, view.max_workers))
    }
    fn report(&self) -> serde_json::Value {
        let mut r = serde_json::json!({ "forecaster": self.forecaster.kind() });
        // The capacity is known from the first decision on (or the spec); a job that ended
        // before any (its pods never came up) has none to report, rather than a null.
        if let Some(c) = self.capacity {
            r["capacity_sps_per_gpu"] = c.into();
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsim_model::online::scenario::TrainMode;

    /// Minute `now_min` of a 300-minute run at a flat 10k samples/s, with or without a
    /// rescale in progress.
    fn view<'a>(now_min: u64, rescaling: bool, rates: &'a [f64]) -> OnlineView<'a> {
        OnlineView {
            now: SimTime::from_secs(now_min * 60),
            target: 3,
            pods: &[],
            minute_rates: &rates[..now_min as usize],
            backlog_samples: 0.0,
            lag_s: 0.0,
            rescaling,
            mode: TrainMode::Sync,
            profile: &[],
            profile_repeats: 1,
            max_workers: 32,
            run_minutes: 300,
            rescale_s: 540.0,
            slo_lag_s: 1_200.0,
            oracle: rates,
        }
    }

    #[test]
    fn a_cooldown_holds_decisions_after_a_rescale_and_none_is_the_default() {
        let rates = vec![10_000.0; 300];
        let spec = |s: &str| PolicySpec::parse(s).unwrap();
        let mut cool =
            Madu::from_spec(&spec("madu[forecaster=oracle,capacity=2000,cooldown_min=9]")).unwrap();
        let mut plain = Madu::from_spec(&spec("madu[forecaster=oracle,capacity=2000]")).unwrap();
        for m in [&mut cool, &mut plain] {
            assert_eq!(m.decide(&view(60, false, &rates)), Some(5), "10k / 2k per GPU");
            assert_eq!(m.decide(&view(61, true, &rates)), None, "never during a rescale");
        }
        // The rescale was last seen at minute 61: 9 minutes of cooldown end at minute 70.
        assert_eq!(plain.decide(&view(62, false, &rates)), Some(5));
        assert_eq!(cool.decide(&view(62, false, &rates)), None);
        assert_eq!(cool.decide(&view(69, false, &rates)), None);
        assert_eq!(cool.decide(&view(70, false, &rates)), Some(5));
    }
}
