package sim

import "math"

// Policy names accepted by Run.
const (
	PolicyPhalanx  = "phalanx"
	PolicyPodByPod = "pod-by-pod"
	PolicyFIFOGang = "fifo-gang"
	// PolicyVolcano is a Volcano-like policy: proportional fair share by
	// queue weight, priority and gangs, without reservation, topology or
	// preemption (see gangPolicyConfig).
	PolicyVolcano = "volcano"
	// PolicyVolcanoBinpack is PolicyVolcano with members packed (the
	// fitting node with the fewest free accelerators first), as Volcano
	// places them when its binpack plugin scores the accelerator.
	PolicyVolcanoBinpack = "volcano-binpack"
)

// Policies lists the policies a run compares unless told otherwise, in the
// order reports show them.
var Policies = []string{PolicyPhalanx, PolicyPodByPod, PolicyFIFOGang, PolicyVolcano}

// MorePolicies lists the policies a run compares only when they are named:
// further baselines, shown after Policies.
var MorePolicies = []string{PolicyVolcanoBinpack}

// Metrics are the figures of one run, as `phalanx simulate --output json`
// prints them. Times are in seconds. A figure over no sample (a completion
// time when no job completed, a wait when none started, rack locality when
// no started job spans nodes...) is nil, which JSON prints as null and the
// table as "—": it is not 0, which would read as the best value.
type Metrics struct {
	JobsTotal         int      `json:"jobs_total"`
	JobsCompleted     int      `json:"jobs_completed"`
	StuckJobs         int      `json:"stuck_jobs"`
	UnschedulableJobs int      `json:"unschedulable_jobs"`
	MeanJCT           *float64 `json:"mean_jct_s"`
	P50JCT            *float64 `json:"p50_jct_s"`
	P99JCT            *float64 `json:"p99_jct_s"`
	MeanWait          *float64 `json:"mean_wait_s"`
	P99Wait           *float64 `json:"p99_wait_s"`
	// P99WaitBig is the p99 wait of the started jobs of 8 GPUs or more.
	P99WaitBig *float64 `json:"p99_wait_big_s"`
	// MaxWaitBig is the longest wait of the started jobs of 8 GPUs or
	// more: what the p99 leaves out, the biggest gangs a policy passes over
	// for others (docs/evaluation-notebook.md, "An eleventh pass").
	MaxWaitBig     *float64 `json:"max_wait_big_s"`
	GPUUtilization *float64 `json:"gpu_utilization"`
	// GPUUtilizationArriving is the utilisation while jobs arrive, from the
	// first submission to the last: under overload the whole run's figure
	// also counts the drain after the last arrival, when a few long jobs
	// are left and most GPUs idle whatever the policy.
	GPUUtilizationArriving *float64 `json:"gpu_utilization_arriving"`
	// WastedGPUSeconds is the GPU time held by members of jobs that are not
	// running, up to the end of the run; GPUs still held so at the end
	// (HeldIdleAtEnd) are counted until the idle horizon (see metrics.go),
	// a lower bound of what they hold forever.
	WastedGPUSeconds float64 `json:"wasted_gpu_s"`
	// HeldIdleAtEnd is the GPUs held, when the run ends, by members of jobs
	// that are not running: nothing will ever free them.
	HeldIdleAtEnd int64 `json:"held_idle_at_end_gpus"`
	// Makespan is from the first submission to the last completion.
	Makespan *float64 `json:"makespan_s"`
	// FairnessMean and FairnessWorst summarise the windowed fairness (see
	// metrics.go): per window of FairnessWindow seconds, each queue
	// deserves its weighted share (water-filled by demand) of what all
	// running jobs received in the window, and the window scores the share
	// of those deserved GPU-seconds that the queues did receive; their mean
	// over the windows where anything ran, and the lowest.
	// FairnessLeastServed is the mean over the same windows of the least
	// queue's received over deserved. 1 is fair; nil when nothing ran, and
	// FairnessWindow then 0.
	FairnessMean        *float64 `json:"fairness_mean"`
	FairnessWorst       *float64 `json:"fairness_worst"`
	FairnessLeastServed *float64 `json:"fairness_least_served"`
	FairnessWindow      int64    `json:"fairness_window_s"`
	// RackLocality is the share of started jobs placed on more than one node
	// whose placed members all run in one rack (the narrowest level of
	// Workload.Topology); nil when no started job spans nodes or the
	// workload has no racks.
	RackLocality *float64 `json:"rack_locality"`
	// PreemptedGangs counts the times a running gang lost members to
	// preemption or reclaim (a gang evicted in two cycles counts twice);
	// EvictedMembers counts the members evicted.
	PreemptedGangs int `json:"preempted_gangs"`
	EvictedMembers int `json:"evicted_members"`
	// PreemptionLostGPUSeconds is the GPU-seconds of run time thrown away by
	// evictions: what each evicted member had run, and what the other
	// members of a job restarted because of them had run.
	PreemptionLostGPUSeconds float64 `json:"preemption_lost_gpu_s"`
	// MemberFailures counts the members that failed while their job ran.
	MemberFailures int `json:"member_failures"`
	// MeanReplacementWait and MaxReplacementWait are how long the
	// replacements of failed members waited for a node, from their creation
	// to their bind (replacements that never bound are not counted); nil
	// when none bound.
	MeanReplacementWait *float64 `json:"mean_replacement_wait_s"`
	MaxReplacementWait  *float64 `json:"max_replacement_wait_s"`
	// Forecast weighs the forecast starts against the actual ones, when
	// Options.ForecastEvery asked for forecasts (phalanx policy only).
	Forecast *ForecastMetrics `json:"forecast,omitempty"`
}

// ForecastMetrics weigh each job's first forecast start (JobOutcome.
// ForecastStart) against its first start: its error is the start minus the
// forecast start, positive when the job started later than forecast.
// Jobs the cycle of their forecast started are left out: the forecast's
// first cycle is that cycle, so they start when forecast by construction.
type ForecastMetrics struct {
	// Every is Options.ForecastEvery; Horizon how far a forecast looks.
	Every   int64 `json:"every_s"`
	Horizon int64 `json:"horizon_s"`
	// Gangs counts the jobs forecast while they waited (see above);
	// WithStart those the forecast gave a start within its horizon, and
	// Started those of them that started.
	Gangs     int `json:"gangs"`
	WithStart int `json:"with_start"`
	Started   int `json:"started"`
	// AbsErrorP50 and AbsErrorP90 are percentiles of the absolute error
	// over Started; MeanError the mean of the signed error.
	AbsErrorP50 *float64 `json:"abs_error_p50_s"`
	AbsErrorP90 *float64 `json:"abs_error_p90_s"`
	MeanError   *float64 `json:"mean_error_s"`
	// WithinHour is the share of Started whose error is at most an hour
	// either way; WithinQuarter the share whose error is at most a quarter
	// of the time from the forecast to the start (at least a minute);
	// Later the share that started later than forecast.
	WithinHour    *float64 `json:"within_1h"`
	WithinQuarter *float64 `json:"within_quarter_of_wait"`
	Later         *float64 `json:"later_than_forecast"`
	// NoStartButStarted counts the jobs the forecast gave no start within
	// its horizon that started within it all the same.
	NoStartButStarted int `json:"no_start_but_started_within_horizon"`
	// BigStarted, BigWithinHour, BigWithinQuarter and BigMeanError are
	// Started, WithinHour, WithinQuarter and MeanError over the jobs of 8
	// GPUs or more (as P99WaitBig), whose waits are the longest.
	BigStarted       int      `json:"big_started"`
	BigWithinHour    *float64 `json:"big_within_1h"`
	BigWithinQuarter *float64 `json:"big_within_quarter_of_wait"`
	BigMeanError     *float64 `json:"big_mean_error_s"`
	// The forecast reservation (JobOutcome.ForecastReserved) weighed the
	// same way against the first reservation (JobOutcome.Reserved), over
	// the jobs of Gangs: Reserved counts those reserved for,
	// GivenReservation those the forecast gave a reservation time, and
	// GivenReserved those of them reserved for; over GivenReserved,
	// ReservationMeanError is the mean of the reservation minus the
	// forecast one, ReservationWithinHour and ReservationWithinQuarter the
	// shares within an hour either way and within a quarter of the time
	// from the forecast to the reservation (at least a minute).
	Reserved                 int      `json:"reserved"`
	GivenReservation         int      `json:"given_reservation"`
	GivenReserved            int      `json:"given_reservation_reserved"`
	ReservationMeanError     *float64 `json:"reservation_mean_error_s"`
	ReservationWithinHour    *float64 `json:"reservation_within_1h"`
	ReservationWithinQuarter *float64 `json:"reservation_within_quarter_of_wait"`
}

// Value returns *f, or NaN for a figure over no sample.
func Value(f *float64) float64 {
	if f == nil {
		return math.NaN()
	}
	return *f
}

// figure returns a pointer to a copy of x.
func figure(x float64) *float64 { return &x }

// JobState is where a job ended up when the run ended.
type JobState string

// Job states at the end of a run.
const (
	JobCompleted     JobState = "Completed"
	JobStuck         JobState = "Stuck"         // would fit an empty cluster, never completed
	JobUnschedulable JobState = "Unschedulable" // would not fit even the empty cluster
)

// JobOutcome is what happened to one job. Start and Finish are -1 when the
// job never started or never finished.
type JobOutcome struct {
	ID     string
	Queue  string
	GPUs   int64
	Submit int64
	Start  int64
	Finish int64
	State  JobState
	// Placed is how many members held a node when the run ended, or when the
	// job started.
	Placed, Members int
	// Reason is the last diagnostic of a job that never started.
	Reason string
	// Duration is the run time the job needs; GPUSeconds the GPU time it
	// received while running, runs later thrown away by preemption
	// included; Preemptions how many times it lost members to preemption
	// or reclaim.
	Duration, GPUSeconds int64
	Preemptions          int
	// Reserved is when nodes were first reserved for the job's gang
	// (reservation with backfill, core/reserve.go), -1 if never.
	Reserved int64
	// FirstStart is when the job first started (Start is its last start,
	// after any restart), -1 if never.
	FirstStart int64
	// ForecastAt is when the first forecast of the job's start was made
	// while it waited for its first start (Options.ForecastEvery), -1 if
	// none was; ForecastStart is the start that forecast gave, -1 if none
	// within its horizon; ForecastReserved is when that forecast gave
	// nodes to be first reserved for the job's gang (a PodGroup's
	// status.expectedReservationTime), -1 if never within its horizon.
	ForecastAt, ForecastStart, ForecastReserved int64
}

// Sample is one step of a step function of time.
type Sample struct {
	Time int64
	// Running is GPUs held by members of running jobs; Held is GPUs held by
	// any member, running or waiting for the rest of its job.
	Running, Held int64
}

// Waiting is a step of the number of jobs waiting: submitted and not
// started, or restarted and not started again.
type Waiting struct {
	Time int64
	Jobs int
}

// PodEvent is one change of one member, recorded when Options.Record is set.
type PodEvent struct {
	Time int64
	Job  string
	Pod  string
	// Kind is one of
	//   - "bound": the member got a node;
	//   - "running": its job started (or it joined a running job);
	//   - "completed": its job completed and it left its node;
	//   - "evicted": preemption evicted it (Reason says for whom), or its
	//     job restarts; it keeps its node while it terminates;
	//   - "deleted": its termination ended and it left its node; unless its
	//     job is done, the member waits for a node again;
	//   - "failed": it died while its job ran and left its node;
	//   - "replaced": its replacement was created and waits for a node;
	//   - "waiting" (Pod empty): the scheduler gave the job a new reason to
	//     wait.
	Kind string
	Node string
	// Reason is the scheduler's message for "waiting" events, and why an
	// "evicted" member was evicted.
	Reason string
}

// Result is the outcome of running one policy over one workload.
type Result struct {
	Policy  string
	Metrics Metrics
	Jobs    []JobOutcome
	// GPUs is a step series of GPUs in use over virtual time.
	GPUs []Sample
	// Waiting is a step series of the jobs waiting over virtual time.
	Waiting []Waiting
	// Events is the per-member timeline, when Options.Record is set.
	Events []PodEvent
}
