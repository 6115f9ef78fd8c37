/// `jobs:` (issue 60).
package struct JobSettings: Sendable, Equatable {
    /// How long a finished job and its mapping and advice files are kept (`jobs.output_ttl_s`).
    package var outputTTLSeconds = 86_400
    /// How long a node holds a job without committing a batch (`jobs.lease_s`): a node killed
    /// mid-job loses it to the next node that looks once this has passed.
    package var leaseSeconds = 30
    /// The largest file `POST /admin/jobs/imports` takes (`jobs.max_input_mib`), in MiB.
    package var maxInputMiB = 4_096
    /// The GnuPG home holding the private key OpenPGP-encrypted import files are decrypted with
    /// (`jobs.gnupg_home`); nil: such files are refused.
    package var gnupgHome: String?
    /// How long an export waits for another person's approval once counted
    /// (`jobs.approval_ttl_s`): past it the job is deleted, nothing written.
    package var approvalTTLSeconds = 86_400
    /// Jobs one token may have that have not ended (`jobs.max_open_per_token`): one more is
    /// refused (429) until one ends.
    package var maxOpenPerToken = 8
    /// How long a job may wait for the rest of its input (`receiving`) before it is swept.
    package var receivingIdleSeconds = 3_600

    package init() {}
}
