//! `adequate`: static provisioning for the peak (Kale's "Adequate Resources" row). Unless
//! `workers=` is given, it holds the fewest workers whose fitted throughput exceeds the
//! run's true peak rate times `1 + headroom`. The peak is read through the oracle view
//! (labelled in outputs): an operator sizing for a known peak.

use super::{num, Autoscaler, OnlineView};
use crate::{param, PolicyDoc, PolicySpec, SpecError};
use dlsim_engine::SimTime;
use dlsim_model::online::throughput::{fit_and_score, FitForm};

pub struct Adequate {
    spec: String,
    workers: Option<u32>,
    headroom: f64,
    peak_sps: Option<f64>,
    decided: bool,
}

/// `adequate`'s parameters (`dlsim policies`).
pub const DOC: PolicyDoc = PolicyDoc {
    name: "adequate",
    summary: "static provisioning for the run's true peak rate (Kale's \"Adequate Resources\"; reads the peak through the oracle view)",
    params: &[
        param("workers", "number >= 1", "-", "hold this many workers instead (default: the fewest whose fitted throughput covers the peak)"),
        param("headroom", "number in [0, 10]", "0.1", "size for peak x (1 + headroom)"),
    ],
};

/// This policy's registry entry (`crate::autoscale::AUTOSCALERS`): its documentation and its builder.
pub const POLICY: crate::Registered<dyn dlsim_model::policy::Autoscaler> = crate::Registered {
    doc: &DOC,
    build: |spec| Ok(Box::new(Adequate::from_spec(spec)?)),
};

impl Adequate {
    pub fn from_spec(s: &PolicySpec) -> Result<Self, SpecError> {
        s.only(&DOC.param_names())?;
        let workers = match s.params.get("workers") {
            Some(_) => Some(num(s, "workers", 1.0, 1.0, 100_000.0)? as u32),
            None => None,
        };
        Ok(Adequate {
            spec: s.canonical(),
            workers,
            headroom: num(s, "headroom", 0.1, 0.0, 10.0)?,
            peak_sps: None,
            decided: false,
        })
    }
}

impl Autoscaler for Adequate {
    fn name(&self) -> String {
        self.spec.clone()
    }
    fn interval(&self) -> SimTime {
        SimTime::from_secs(60)
    }
    fn decide(&mut self, view: &OnlineView) -> Option<u32> {
        if self.decided {
            return None;
        }
        self.decided = true;
        let w = match self.workers {
            Some(w) => w,
            None => {
                let peak = view
                    .oracle_future(0, view.run_minutes)
                    .iter()
                    .copied()
                    .fold(0.0, f64::max);
                self.peak_sps = Some(peak);
                let form = FitForm::kale(view.mode);
                let (model, _) = fit_and_score(form, view.profile, view.profile_repeats);
                model.min_workers_for(peak * (1.0 + self.headroom), view.max_workers)
            }
        };
        self.workers = Some(w);
        Some(w)
    }
    fn report(&self) -> serde_json::Value {
        // Only what was decided: a fixed `workers=` reads no peak, and a job that ended
        // before the first decision has neither (a null would read as a missing metric).
        let mut r = serde_json::Map::new();
        if let Some(w) = self.workers {
            r.insert("workers".into(), w.into());
        }
        if let Some(p) = self.peak_sps {
            r.insert("oracle_peak_sps".into(), p.into());
        }
        serde_json::Value::Object(r)
    }
}
