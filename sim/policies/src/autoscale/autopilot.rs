//! `autopilot`: a moving-window recommender in the style of Google's Autopilot horizontal
//! scaling (Rzadca et al., EuroSys 2020). Every minute it records the job's GPU usage (the
//! sum of the ready pods' scraped utilisation, in GPUs), summarises the last `window_min`
//! minutes by a statistic (`decayed`: exponentially decayed average with `half_life_min`;
//! `max`; or `pNN`, a percentile), and recommends `ceil(stat / target)` workers. A rise is
//! applied at once; a fall only when every recommendation of the last `defer_min` minutes
//! is at or below it (deferred scale-down). It sees no traffic forecast and no backlog, and
//! does not decide while a rescale is in progress or no pod reports, nor within an optional
//! cooldown after a rescale (`cooldown_min`, `Cooldown`, our addition: without one, the
//! decision right after a rescale reads the rebuilding pods' 0% GPU, and through a backlog
//! the deferred scale-down can step the job down a worker or two per rescale).

use super::{num, Autoscaler, Cooldown, OnlinePodPhase, OnlineView};
use crate::{param, PolicyDoc, PolicySpec, SpecError};
use dlsim_engine::SimTime;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Stat {
    Decayed,
    Max,
    Percentile(f64),
}

pub struct Autopilot {
    spec: String,
    stat: Stat,
    window_min: f64,
    half_life_min: f64,
    target: f64,
    defer_min: f64,
    usage: VecDeque<(SimTime, f64)>,
    recs: VecDeque<(SimTime, u32)>,
    cooldown: Cooldown,
}

/// `autopilot`'s parameters (`dlsim policies`).
pub const DOC: PolicyDoc = PolicyDoc {
    name: "autopilot",
    summary: "Autopilot-style (EuroSys'20) moving-window recommender on GPU usage, with deferred scale-down",
    params: &[
        param("stat", "decayed|max|pNN", "decayed", "window statistic: decayed average, maximum, or a percentile such as p95"),
        param("window_min", "number in [1, 10080]", "60", "usage window (minutes)"),
        param("half_life_min", "number in [0.1, 10080]", "10", "half-life of stat=decayed (minutes)"),
        param("target", "number in [0.01, 1]", "0.8", "target GPU utilisation: workers = ceil(stat / target)"),
        param("defer_min", "number in [0, 10080]", "20", "scale down only if every recommendation of the last defer_min minutes allows it"),
        super::COOLDOWN_PARAM,
    ],
};

/// This policy's registry entry (`crate::autoscale::AUTOSCALERS`): its documentation and its builder.
pub const POLICY: crate::Registered<dyn dlsim_model::policy::Autoscaler> = crate::Registered {
    doc: &DOC,
    build: |spec| Ok(Box::new(Autopilot::from_spec(spec)?)),
};

impl Autopilot {
    pub fn from_spec(s: &PolicySpec) -> Result<Self, SpecError> {
        s.only(&DOC.param_names())?;
        let stat = match s.params.get("stat").map(String::as_str) {
            None | Some("decayed") => Stat::Decayed,
            Some("max") => Stat::Max,
            Some(p)
                if p.starts_with('p')
                    && p[1..].parse::<f64>().is_ok_and(|q| q > 0.0 && q <= 100.0) =>
            {
                Stat::Percentile(p[1..].parse::<f64>().expect("checked") / 100.0)
            }
            Some(_) => return Err(s.bad_value("stat", "expected decayed, max or pNN (e.g. p95)")),
        };
        Ok(Autopilot {
            spec: s.canonical(),
            stat,
            window_min: num(s, "window_min", 60.0, 1.0, 10_080.0)?,
            half_life_min: num(s, "half_life_min", 10.0, 0.1, 10_080.0)?,
            target: num(s, "target", 0.8, 0.01, 1.0)?,
            defer_min: num(s, "defer_min", 20.0, 0.0, 10_080.0)?,
            usage: VecDeque::new(),
            recs: VecDeque::new(),
            cooldown: Cooldown::from_spec(s)?,
        })
    }

    fn statistic(&self, now: SimTime) -> f64 {
        match self.stat {
            Stat::Max => self.usage.iter().map(|u| u.1).fold(0.0, f64::max),
            Stat::Percentile(q) => {
                let mut v: Vec<f64> = self.usage.iter().map(|u| u.1).collect();
                v.sort_by(f64::total_cmp);
                let idx = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
                v[idx]
            }
            Stat::Decayed => {
                let (mut num, mut den) = (0.0, 0.0);
                for &(t, u) in &self.usage {
                    let age_min = (now.as_ms() - t.as_ms()) as f64 / 60_000.0;
                    let w = 0.5f64.powf(age_min / self.half_life_min);
                    num += w * u;
                    den += w;
                }
                num / den
            }
        }
    }
}

impl Autoscaler for Autopilot {
    fn name(&self) -> String {
        self.spec.clone()
    }
    fn interval(&self) -> SimTime {
        SimTime::from_secs(60)
    }
    fn decide(&mut self, view: &OnlineView) -> Option<u32> {
        let may_act = self.cooldown.may_act(view);
        if view.rescaling {
            return None;
        }
        let ready: Vec<f64> = view
            .pods
            .iter()
            .filter(|p| p.phase == OnlinePodPhase::Running && p.ready)
            .filter_map(|p| p.gpu_util.map(|m| m.value))
            .collect();
        if ready.is_empty() {
            return None;
        }
        let now = view.now;
        self.usage.push_back((now, ready.iter().sum()));
        let keep = |t: SimTime, min: f64| (now.as_ms() - t.as_ms()) as f64 <= min * 60_000.0;
        while self
            .usage
            .front()
            .is_some_and(|u| !keep(u.0, self.window_min))
        {
            self.usage.pop_front();
        }
        let rec = ((self.statistic(now) / self.target).ceil() as u32).max(1);
        self.recs.push_back((now, rec));
        while self
            .recs
            .front()
            .is_some_and(|r| !keep(r.0, self.defer_min))
        {
            self.recs.pop_front();
        }
        // Usage and recommendations are recorded through the cooldown; it delays acting only.
        if !may_act {
            return None;
        }
        if rec >= view.target {
            return Some(rec);
        }
        // Deferred scale-down: the highest recommendation of the deferral window.
        Some(
            self.recs
                .iter()
                .map(|r| r.1)
                .max()
                .unwrap_or(rec)
                .min(view.target),
        )
    }
}
