//! Policy spec strings: `name` or `name[key=value,key=value]`.
//!
//! Parameters are kept in a `BTreeMap`, so a spec's canonical form (used in outputs) lists
//! them in a fixed order. Each policy takes the keys it knows and rejects the rest, so a
//! typo in an ablation sweep is an error, not a silently ignored knob.
//!
//! The keys a policy takes are those of its [`PolicyDoc`] (each policy file's `DOC`), which
//! also gives each one's type, default and meaning: `dlsim policies` and `dlsim replay
//! --help` print these docs, so what is listed is exactly what is accepted.

use dlsim_model::policy::JobConfig;
use std::collections::BTreeMap;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    #[error("malformed policy spec `{spec}`: {why}")]
    Malformed { spec: String, why: String },
    #[error("unknown policy `{name}` (known: {known})")]
    UnknownPolicy { name: String, known: String },
    #[error("policy `{policy}` has no parameter `{key}` (it takes: {known})")]
    UnknownParam {
        policy: String,
        key: String,
        known: String,
    },
    #[error("policy `{policy}`: parameter `{key}` = `{value}`: {why}")]
    BadValue {
        policy: String,
        key: String,
        value: String,
        why: String,
    },
    /// A part of a composed spec (`dlrover+kale`) is bad: the error names the whole spec.
    #[error("in `{spec}`: {inner}")]
    InComposed { spec: String, inner: Box<SpecError> },
}

/// One parameter of a policy, as `dlsim policies` lists it.
#[derive(Clone, Copy, Debug)]
pub struct ParamDoc {
    pub name: &'static str,
    /// The values it takes, e.g. `number`, `on/off`, `static|dynamic`.
    pub kind: &'static str,
    /// The value used when the key is absent, as it would be written in a spec; `-` when
    /// absent means something no value spells (e.g. "derived from the run").
    pub default: &'static str,
    /// One line: what it changes.
    pub meaning: &'static str,
}

/// A policy's name, one-line summary and parameters: the registry entry that both
/// documents the policy and bounds the keys its spec accepts.
#[derive(Clone, Copy, Debug)]
pub struct PolicyDoc {
    pub name: &'static str,
    pub summary: &'static str,
    pub params: &'static [ParamDoc],
}

impl PolicyDoc {
    /// The parameter names, in the documented order.
    pub fn param_names(&self) -> Vec<&'static str> {
        self.params.iter().map(|p| p.name).collect()
    }
}

/// Shorthand for a [`ParamDoc`] in the policies' `DOC` tables.
pub const fn param(
    name: &'static str,
    kind: &'static str,
    default: &'static str,
    meaning: &'static str,
) -> ParamDoc {
    ParamDoc {
        name,
        kind,
        default,
        meaning,
    }
}

/// Renders docs as the text `dlsim policies` prints: per policy its summary, then per
/// parameter `key=VALUES [default: X]` and its meaning on the next line.
pub fn render_docs(docs: &[&PolicyDoc]) -> String {
    let mut out = String::new();
    for d in docs {
        out.push_str(&format!("\n{}: {}\n", d.name, d.summary));
        if d.params.is_empty() {
            out.push_str("  (no parameters)\n");
        }
        for p in d.params {
            let default = match p.default {
                "-" => String::new(),
                x => format!("  [default: {x}]"),
            };
            out.push_str(&format!(
                "  {}={}{default}\n      {}\n",
                p.name, p.kind, p.meaning
            ));
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq)]
pub struct PolicySpec {
    pub name: String,
    pub params: BTreeMap<String, String>,
}

/// The largest size of a numeric policy parameter (seconds, cores, factors).
pub const MAX_PARAM: f64 = dlsim_traces::limits::MAX_TIME_S;

impl PolicySpec {
    pub fn parse(spec: &str) -> Result<PolicySpec, SpecError> {
        let bad = |why: &str| SpecError::Malformed {
            spec: spec.to_string(),
            why: why.to_string(),
        };
        let spec_t = spec.trim();
        let (name, rest) = match spec_t.find('[') {
            Some(i) => {
                if !spec_t.ends_with(']') {
                    return Err(bad("missing closing `]`"));
                }
                (&spec_t[..i], Some(&spec_t[i + 1..spec_t.len() - 1]))
            }
            None => (spec_t, None),
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(bad("the name must be letters, digits, `-` or `_`"));
        }
        let mut params = BTreeMap::new();
        if let Some(rest) = rest.filter(|r| !r.trim().is_empty()) {
            for kv in rest.split(',') {
                let (k, v) = kv
                    .split_once('=')
                    .ok_or_else(|| bad(&format!("`{kv}` is not key=value")))?;
                let (k, v) = (k.trim(), v.trim());
                if k.is_empty() || v.is_empty() {
                    return Err(bad(&format!("empty key or value in `{kv}`")));
                }
                if params.insert(k.to_string(), v.to_string()).is_some() {
                    return Err(bad(&format!("`{k}` given twice")));
                }
            }
        }
        Ok(PolicySpec {
            name: name.to_string(),
            params,
        })
    }

    /// The canonical form: parameters sorted by key.
    pub fn canonical(&self) -> String {
        if self.params.is_empty() {
            return self.name.clone();
        }
        let kv: Vec<String> = self
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("{}[{}]", self.name, kv.join(","))
    }

    /// Fails if any parameter is not in `known`.
    pub fn only(&self, known: &[&str]) -> Result<(), SpecError> {
        for k in self.params.keys() {
            if !known.contains(&k.as_str()) {
                let known = if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                };
                return Err(SpecError::UnknownParam {
                    policy: self.name.clone(),
                    key: k.clone(),
                    known,
                });
            }
        }
        Ok(())
    }

    /// A numeric parameter, or `default` when absent. Every policy number is bounded by
    /// [`MAX_PARAM`] in size (issue #21: no parameter may overflow time or a search);
    /// policies check their own tighter ranges.
    pub fn f64_or(&self, key: &str, default: f64) -> Result<f64, SpecError> {
        match self.params.get(key) {
            None => Ok(default),
            Some(v) => v
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && x.abs() <= MAX_PARAM)
                .ok_or_else(|| self.bad_value(key, "expected a number of at most 1e9 in size")),
        }
    }

    /// A whole-number parameter in `1..=1000`, or `default` when absent.
    pub fn count_or(&self, key: &str, default: u32) -> Result<u32, SpecError> {
        let v = self.f64_or(key, f64::from(default))?;
        if v >= 1.0 && v.fract() == 0.0 && v <= 1000.0 {
            Ok(v as u32)
        } else {
            Err(self.bad_value(key, "expected a whole number in 1..=1000"))
        }
    }

    /// The error for parameter `key` (its value as written, empty if absent) and `why`.
    pub fn bad_value(&self, key: &str, why: &str) -> SpecError {
        SpecError::BadValue {
            policy: self.name.clone(),
            key: key.into(),
            value: self.params.get(key).cloned().unwrap_or_default(),
            why: why.into(),
        }
    }

    /// A switch: `on/off`, `true/false`, `1/0`.
    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, SpecError> {
        match self.params.get(key).map(String::as_str) {
            None => Ok(default),
            Some("on" | "true" | "1" | "yes") => Ok(true),
            Some("off" | "false" | "0" | "no") => Ok(false),
            Some(_) => Err(self.bad_value(key, "expected on/off")),
        }
    }
}

/// The pods a baseline launches, where its paper's evaluation sized them itself (DLRover
/// Sec. 6.3: "DLRover configures each PS and worker's CPU resources according to Table 2"
/// for ES and Optimus): cores per worker and per PS, and the PS count of a policy that
/// does not scale PS. Each absent key keeps the user's request.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PodShape {
    pub worker_cpu: Option<f64>,
    pub ps_cpu: Option<f64>,
    pub ps: Option<u32>,
}

impl PodShape {
    /// The keys `worker_cpu` and `ps_cpu` (cores, above 0 and at most 1,024) and, with
    /// `with_ps`, `ps` (a count).
    pub fn from_spec(spec: &PolicySpec, with_ps: bool) -> Result<Self, SpecError> {
        let cores = |key: &str| -> Result<Option<f64>, SpecError> {
            if !spec.params.contains_key(key) {
                return Ok(None);
            }
            let v = spec.f64_or(key, 0.0)?;
            if v > 0.0 && v <= 1024.0 {
                Ok(Some(v))
            } else {
                Err(spec.bad_value(key, "expected cores above 0 and at most 1024"))
            }
        };
        let ps = if with_ps && spec.params.contains_key("ps") {
            Some(spec.count_or("ps", 1)?)
        } else {
            None
        };
        Ok(PodShape {
            worker_cpu: cores("worker_cpu")?,
            ps_cpu: cores("ps_cpu")?,
            ps,
        })
    }

    /// The cores this shape gives every pod of a role, as (spec key, cores)
    /// ([`dlsim_model::policy::Policy::pod_cores`]).
    pub fn pod_cores(&self) -> Vec<(&'static str, f64)> {
        [("worker_cpu", self.worker_cpu), ("ps_cpu", self.ps_cpu)]
            .into_iter()
            .filter_map(|(key, cores)| cores.map(|c| (key, c)))
            .collect()
    }

    /// `config` with this shape's pods (a job without PS keeps none).
    pub fn apply(&self, mut config: JobConfig) -> JobConfig {
        if let Some(c) = self.worker_cpu {
            config.worker_cpu = c;
        }
        if config.ps > 0 {
            if let Some(c) = self.ps_cpu {
                config.ps_cpu = c;
            }
            if let Some(n) = self.ps {
                config.ps = n;
            }
        }
        config
    }
}

/// Splits a list of specs, `a,b[x=1,y=2],c`, at the commas outside brackets; one spec
/// gives a list of one.
pub fn split_list(list: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0i32);
    for c in list.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur).trim().to_string());
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur.trim().to_string());
    out
}

/// Splits a composed spec, `dlrover[rho=2.5]+kale`, at the `+` outside brackets into its
/// cluster-level part and its per-job autoscaler part; a spec without `+` is one part.
/// More than two parts, or an empty one, is malformed.
pub fn split_composed(spec: &str) -> Result<Vec<&str>, SpecError> {
    let (mut parts, mut start, mut depth) = (Vec::new(), 0, 0i32);
    for (i, c) in spec.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            '+' if depth == 0 => {
                parts.push(spec[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(spec[start..].trim());
    let malformed = |why: &str| SpecError::Malformed {
        spec: spec.to_string(),
        why: why.to_string(),
    };
    if parts.len() > 2 {
        return Err(malformed(
            "at most two parts, a cluster policy and an autoscaler: `dlrover+kale`",
        ));
    }
    if parts.len() == 1 && parts[0].is_empty() {
        return Err(malformed("no policy named (see `dlsim policies`)"));
    }
    if parts.iter().any(|p| p.is_empty()) {
        return Err(malformed("an empty part around `+`"));
    }
    Ok(parts)
}

/// A folder name for a run of `spec`: `dlrover[rho=2.5,mu=0.3]` -> `dlrover-rho-2.5-mu-0.3`.
/// Letters, digits, `.` and `_` are kept; every other character (`[`, `=`, `,`, `]`, ...)
/// becomes one `-` (runs of them collapse), and no `-` leads or trails.
pub fn folder_name(spec: &str) -> String {
    let mut out = String::new();
    for c in spec.chars() {
        if c.is_ascii_alphanumeric() || "._".contains(c) {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A user's request: 1 worker x 32 cores, 2 PS x 8 (memory is never touched).
    fn request(ps: u32) -> JobConfig {
        JobConfig {
            workers: 1,
            ps,
            worker_cpu: 32.0,
            worker_mem_mb: 16_384,
            worker_gpu: 0,
            ps_cpu: 8.0,
            ps_mem_mb: 8_192,
        }
    }

    #[test]
    fn a_pod_shape_replaces_only_the_keys_it_names() {
        let spec = PolicySpec::parse("es[worker_cpu=3,ps=8,ps_cpu=16]").unwrap();
        let shape = PodShape::from_spec(&spec, true).unwrap();
        let got = shape.apply(request(2));
        assert_eq!(
            (got.workers, got.worker_cpu, got.ps, got.ps_cpu),
            (1, 3.0, 8, 16.0)
        );
        assert_eq!((got.worker_mem_mb, got.ps_mem_mb), (16_384, 8_192));
        // Absent keys keep the request; a policy that scales PS itself takes no `ps`.
        let none = PodShape::from_spec(&PolicySpec::parse("es").unwrap(), true).unwrap();
        assert_eq!(none.apply(request(2)), request(2));
        let no_ps = PodShape::from_spec(&spec, false).unwrap();
        assert_eq!(no_ps.apply(request(2)).ps, 2);
        // A job without PS (an all-reduce job) keeps none.
        assert_eq!(shape.apply(request(0)).ps, 0);
        for bad in [
            "es[worker_cpu=0]",
            "es[ps_cpu=-2]",
            "es[worker_cpu=2000]",
            "es[ps=0]",
        ] {
            let spec = PolicySpec::parse(bad).unwrap();
            assert!(PodShape::from_spec(&spec, true).is_err(), "{bad}");
        }
    }

    #[test]
    fn composed_specs_split_at_the_plus_outside_brackets() {
        assert_eq!(split_composed("dlrover").unwrap(), vec!["dlrover"]);
        assert_eq!(
            split_composed("dlrover[rho=2.5] + kale[forecaster=oracle]").unwrap(),
            vec!["dlrover[rho=2.5]", "kale[forecaster=oracle]"]
        );
        assert_eq!(split_composed("x[a=1+2]+y").unwrap(), vec!["x[a=1+2]", "y"]);
        assert!(split_composed("a+b+c").is_err());
        assert!(split_composed("+kale").is_err());
        assert_eq!(folder_name("dlrover+kale"), "dlrover-kale");
    }

    #[test]
    fn lists_split_outside_brackets_and_folders_are_clean() {
        assert_eq!(
            split_list("hpa,kale[rho=1,tau_min=5], madu"),
            vec!["hpa", "kale[rho=1,tau_min=5]", "madu"]
        );
        assert_eq!(split_list("static"), vec!["static"]);
        assert_eq!(
            folder_name("dlrover[rho=2.5,mu=0.3]"),
            "dlrover-rho-2.5-mu-0.3"
        );
        assert_eq!(
            folder_name("kale[forecaster=oracle]"),
            "kale-forecaster-oracle"
        );
        assert_eq!(folder_name("static[slow=restart]"), "static-slow-restart");
        assert_eq!(folder_name("dlrover-oss"), "dlrover-oss");
    }

    #[test]
    fn parses_names_and_params() {
        let s = PolicySpec::parse("dlrover[warm_start=off, rho=2.5]").unwrap();
        assert_eq!(s.name, "dlrover");
        assert_eq!(s.params["rho"], "2.5");
        assert_eq!(s.canonical(), "dlrover[rho=2.5,warm_start=off]");
        assert!(!s.bool_or("warm_start", true).unwrap());
        assert_eq!(s.f64_or("rho", 1.0).unwrap(), 2.5);
        assert_eq!(PolicySpec::parse("static").unwrap().canonical(), "static");
    }

    #[test]
    fn rejects_malformed_specs() {
        for bad in ["", "x[", "x[a]", "x[a=1,a=2]", "x y", "x[=1]"] {
            assert!(PolicySpec::parse(bad).is_err(), "{bad} should be rejected");
        }
        let s = PolicySpec::parse("es[theta=abc]").unwrap();
        assert!(s.f64_or("theta", 0.3).is_err());
        assert!(s.only(&["spawn"]).is_err());
    }
}
