//! `dlsim policies`: every policy with its parameters, types, defaults and meanings, from
//! the registries (`dlsim_policies::POLICY_DOCS`, `dlsim_policies::autoscale::DOCS`) that also
//! bound the keys each spec accepts. The same text closes `dlsim replay --help`.

use clap::Args;
use std::process::ExitCode;

#[derive(Args)]
pub struct PoliciesArgs {
    /// Accepted on every command; the listing is this command's output, so it still prints.
    #[arg(long, short)]
    pub quiet: bool,
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

pub fn run(_args: &PoliciesArgs) -> anyhow::Result<ExitCode> {
    print!("{}", text());
    Ok(ExitCode::SUCCESS)
}
