//! `dlsim policies`: every policy with its parameters, types, defaults and meanings, from
//! the registries (`dlsim_policies::POLICY_DOCS`, `dlsim_online::policy::DOCS`) that also
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
         SPEC`. A key a policy does not take is an error.\n\
         \n\
         Batch policies (cluster-level; for batch scenarios such as scenarios/quickstart.json):\n\
         {}\n\
         Online policies (autoscalers; for \"kind\": \"online\" scenarios such as\n\
         scenarios/online-7d.json; `--policy hpa,kale` compares several in one run):\n\
         {}",
        dlsim_policies::render_docs(dlsim_policies::POLICY_DOCS),
        dlsim_policies::render_docs(dlsim_online::policy::DOCS),
    )
}

pub fn run(_args: &PoliciesArgs) -> anyhow::Result<ExitCode> {
    print!("{}", text());
    Ok(ExitCode::SUCCESS)
}
