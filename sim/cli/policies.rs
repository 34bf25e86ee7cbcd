//! `dlsim policies`: every policy with its parameters, types, defaults and meanings, from
//! the registries (`dlsim_policies::POLICY_DOCS`, `dlsim_policies::autoscale::DOCS`) that also
//! bound the keys each spec accepts. The same text closes `dlsim replay --help`.

use clap::Args;
use std::process::ExitCode;

#[derive(Args)]
pub struct PoliciesArgs {
    /// Print only the names of one kind of policy, one per line (for scripts, e.g.
    /// `scripts/compare-policies.sh`).
    #[arg(long, value_name = "KIND", conflicts_with = "markdown")]
    pub names: Option<Kind>,
    /// Print the README's table of policies (name and summary) in Markdown.
    #[arg(long)]
    pub markdown: bool,
    /// Accepted on every command; the listing is this command's output, so it still prints.
    #[arg(long, short)]
    pub quiet: bool,
}

/// The two kinds of policy.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Kind {
    /// Cluster-level policies of batch (PS/worker training) jobs.
    Batch,
    /// Autoscalers of online (streaming) training jobs.
    Online,
}

impl Kind {
    fn docs(self) -> &'static [&'static dlsim_policies::PolicyDoc] {
        match self {
            Kind::Batch => dlsim_policies::POLICY_DOCS,
            Kind::Online => dlsim_policies::autoscale::DOCS,
        }
    }
}

/// The README's table of policies (between its `dlsim policies --markdown` markers, kept
/// current by `tests/it/policies.rs`): one row per registry entry, batch then online.
pub fn markdown() -> String {
    let mut s = String::from("| policy | kind | what it is |\n|---|---|---|\n");
    for (kind, label) in [(Kind::Batch, "batch"), (Kind::Online, "online")] {
        for d in kind.docs() {
            s.push_str(&format!(
                "| `{}` | {label} | {} |\n",
                d.name,
                d.summary.replace('|', "\\|")
            ));
        }
    }
    s
}

/// The listing: the spec syntax, then the batch and the online policies.
pub fn text() -> String {
    format!(
        "Policies are chosen by spec strings, NAME or NAME[key=value,...], e.g.\n\
         `dlrover[rho=2.5,warm_start=off]`: a scenario's \"policy\", or `dlsim replay --policy\n\
         SPEC`. A key a policy does not take is an error. A spec may compose a cluster\n\
         policy with an autoscaler for online jobs: `dlrover+kale`; an autoscaler alone\n\
         (`kale`) runs batch jobs under `static`. `--policy a,b` replays each in turn.\n\
         \n\
         Cluster policies (decide for batch jobs, e.g. scenarios/quickstart.json):\n\
         {}\n\
         Autoscalers (one per online job, e.g. scenarios/online-7d.json,\n\
         scenarios/mixed-antgroup.json):\n\
         {}",
        dlsim_policies::render_docs(dlsim_policies::POLICY_DOCS),
        dlsim_policies::render_docs(dlsim_policies::autoscale::DOCS),
    )
}

pub fn run(args: &PoliciesArgs) -> anyhow::Result<ExitCode> {
    if let Some(kind) = args.names {
        for d in kind.docs() {
            println!("{}", d.name);
        }
    } else if args.markdown {
        print!("{}", markdown());
    } else {
        print!("{}", text());
    }
    Ok(ExitCode::SUCCESS)
}
