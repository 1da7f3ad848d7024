// Package trainer is the protocol ptopofl.trainer/v1 between a ptopofl site
// worker and the site's own training program (docs/how-to/own-trainer.md):
// the task file the worker writes (Task, task.json), the files the program
// writes back (Result, ErrorReport), the lines it prints (progress, done),
// the environment it gets, and Main, which runs a Go program's Handler in
// either of the protocol's two modes:
//
//   - per task (the worker's --trainer NAME=COMMAND): one process per task
//     attempt, the task file's path in $PTOPOFL_TASK, the outcome in the
//     exit status (0, or 65 bad site data, 66 bad input model, 75
//     transient) and the result file;
//   - serve (--trainer-serve NAME=COMMAND): one long-lived process per
//     site, started with PTOPOFL_SERVE=1, reading one absolute task.json
//     path per line on standard input and printing "ptopofl:done PATH"
//     on standard output when that task's result (or error.json with its
//     status) is written.
//
// The package also holds what the worker uses to read a program's outputs
// (ReadResult, ReadErrorReport) and the kinds of the faults it names when
// those outputs break the protocol (KindNoResult, …), so that a program
// written outside this module sees the same definitions. It depends on
// the standard library only.
package trainer

// Protocol is the protocol name task.json carries.
const Protocol = "ptopofl.trainer/v1"

// The tasks a program is asked to do.
const (
	TaskInit     = "init"
	TaskTrain    = "train"
	TaskEvaluate = "evaluate"
	TaskEmbed    = "embed"
)

// The statuses the protocol gives a meaning: a per-task program's exit
// status, or error.json's status in serve mode (sysexits.h's EX_DATAERR,
// EX_NOINPUT and EX_TEMPFAIL). 65 and 66 are not retried: the site drops
// out of the round with the kind in the manifest. 75 is retried.
const (
	StatusBadSiteData = 65
	StatusBadModel    = 66
	StatusTransient   = 75
)

// File names inside a task directory.
const (
	TaskFile     = "task.json"
	ResultFile   = "result.json"
	ErrorFile    = "error.json"
	ModelInFile  = "model_in.safetensors"
	ModelOutFile = "model_out.safetensors"
	EmbedOutFile = "embed_out.safetensors"
)

// Environment variables the worker sets. A per-task program gets EnvTask;
// a serve-mode program gets EnvServe ("1") and EnvServeDir, its own
// directory (its working directory and HOME unless the site says
// otherwise), which lives as long as the process and is removed after it.
const (
	EnvTask     = "PTOPOFL_TASK"
	EnvServe    = "PTOPOFL_SERVE"
	EnvServeDir = "PTOPOFL_SERVE_DIR"
)

// Line prefixes on a program's standard output. A progress line carries a
// JSON object, which becomes the activity's heartbeat details (counters,
// never data); a done line (serve mode) carries the absolute path of the
// task.json whose outputs are written.
const (
	ProgressPrefix = "ptopofl:progress "
	DonePrefix     = "ptopofl:done "
)

// Task is task.json. Paths are absolute. ModelIn is absent for init,
// ModelOut present for init and train, Rows and EmbedOut for embed only.
type Task struct {
	Protocol string `json:"protocol"`
	// Task is TaskInit, TaskTrain, TaskEvaluate or TaskEmbed.
	Task     string `json:"task"`
	Campaign string `json:"campaign"`
	Site     string `json:"site"`
	Round    int    `json:"round"`
	// Seed is the same for every attempt of a task; it may exceed 2⁶³.
	Seed   uint64 `json:"seed"`
	Method string `json:"method"`
	// Hyperparameters are the campaign's, by their JSON names, with the
	// preset's defaults filled in, plus "preset" and trainer_params' keys.
	Hyperparameters map[string]any `json:"hyperparameters"`
	// Label is a tabular site's label column (the worker's --label);
	// absent for an image site, whose labels are a file of their own.
	Label string `json:"label,omitempty"`
	// TrainData and TestData are the site's own files: one CSV or parquet
	// file for a tabular site, the images then the labels IDX file for an
	// image site.
	TrainData []string `json:"train_data"`
	TestData  []string `json:"test_data"`
	ModelIn   string   `json:"model_in,omitempty"`
	ModelOut  string   `json:"model_out,omitempty"`
	// Rows (embed) are 0-based indices into the rows of TrainData: the
	// data rows of a tabular file (its header not counted), the images of
	// an image site.
	Rows     []int  `json:"rows,omitempty"`
	EmbedOut string `json:"embed_out,omitempty"`
	// Result is where the program writes its result, last.
	Result string `json:"result"`
}

// Result is the program's result file: the aggregation weight (at least 1
// for train) and finite metrics (evaluate: accuracy and/or auc in [0, 1];
// train: loss, and optionally accuracy and auc of the trained model).
type Result struct {
	NumExamples int64              `json:"num_examples"`
	Metrics     map[string]float64 `json:"metrics"`
}

// ErrorReport is error.json, which a program may write beside its result
// to say why a task failed. Kind reaches the round's manifest when it is
// an identifier ([A-Za-z0-9_.-]{1,64}); Message, which could hold
// anything, goes to the worker's log only. Status is required in serve
// mode (65, 66 or 75, the per-task exit statuses' meanings) and ignored
// per task, where the exit status says it.
type ErrorReport struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Status  int    `json:"status,omitempty"`
}

// The kinds of fault the worker names when a program's outputs break the
// protocol. Each is final for the attempt and not retried (the same
// program, data and model give the same outputs again): the site drops
// out of that round with the kind in the manifest's dropped[].kind.
const (
	// KindNoResult: the program exited 0 (per task) or printed its done
	// line (serve) without writing its result file or error.json.
	KindNoResult = "TrainerNoResult"
	// KindBadResult: the result file is not the protocol's JSON object
	// (malformed, a metric that is not a number, num_examples that is not
	// a non-negative integer, or below 1 for train).
	KindBadResult = "TrainerBadResult"
	// KindNonFiniteMetric: a metric is NaN or infinite (Python's json
	// writes them as the bare tokens NaN, Infinity, -Infinity), or beyond
	// float64's range.
	KindNonFiniteMetric = "NonFiniteMetric"
	// KindMetricOutOfRange: accuracy or auc outside [0, 1].
	KindMetricOutOfRange = "MetricOutOfRange"
	// KindMissingOutput: the result is written but the model (init,
	// train) or embeddings (embed) file is not.
	KindMissingOutput = "MissingOutput"
	// KindMalformedSafetensors: the model or embeddings file is unreadable
	// or not a valid safetensors file.
	KindMalformedSafetensors = "MalformedSafetensors"
	// KindUnsupportedDType: a tensor is neither F32 nor F64 (an I64
	// buffer such as BatchNorm's num_batches_tracked).
	KindUnsupportedDType = "UnsupportedDType"
	// KindLayoutMismatch: the model's tensors (names, dtypes, shapes)
	// differ from the campaign's layout, or the embeddings are not one
	// tensor "embeddings" of shape [len(rows), k].
	KindLayoutMismatch = "LayoutMismatch"
	// KindNonFiniteModel: a model holds NaN or an infinity.
	KindNonFiniteModel = "NonFiniteModel"
	// KindNonFiniteEmbedding: an embedding holds NaN or an infinity.
	KindNonFiniteEmbedding = "NonFiniteEmbedding"
	// KindProtocol: another break of the protocol (a done line for a task
	// that is not the one in flight).
	KindProtocol = "TrainerProtocol"
)
