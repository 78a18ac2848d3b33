package queue

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pallasify/pallasify/pipeline/batch"
)

// Stages a repository job records as it goes.
const (
	StageStarted     = "started"
	StageDone        = "done"
	StageFailed      = "failed"
	StageInterrupted = "interrupted"
	// The batch runner's own stages (clone, migrate, deliver) are recorded too.
)

// progressSchema is pallasify's table beside River's: one row per job,
// written by the worker that runs it, read by the retry and `batch status`.
// The SQL is common to SQLite and PostgreSQL.
const progressSchema = `CREATE TABLE IF NOT EXISTS pallasify_job_progress (
	job_id        BIGINT PRIMARY KEY,
	stage         TEXT NOT NULL,
	attempt       INTEGER NOT NULL,
	worker        TEXT NOT NULL,
	pushed_commit TEXT NOT NULL DEFAULT '',
	pr_number     INTEGER NOT NULL DEFAULT 0,
	status_json   TEXT NOT NULL DEFAULT '',
	updated_at    TEXT NOT NULL
)`

// Progress is a job's recorded state.
type Progress struct {
	JobID   int64  `json:"job_id"`
	Stage   string `json:"stage"`
	Attempt int    `json:"attempt"`
	Worker  string `json:"worker"`
	// PushedCommit is the tip of the pallasify branch the job pushed (or
	// found already pushed); PR the pull request it opened or updated.
	PushedCommit string        `json:"pushed_commit,omitempty"`
	PR           int           `json:"pr,omitempty"`
	Status       *batch.Status `json:"status,omitempty"`
	UpdatedAt    time.Time     `json:"updated_at"`
}

// record upserts a job's progress ($N placeholders: both SQLite and
// PostgreSQL read them; each appears first in order).
func (q *Queue) record(ctx context.Context, p Progress) error {
	var status string
	if p.Status != nil {
		data, err := json.Marshal(p.Status)
		if err != nil {
			return err
		}
		status = string(data)
	}
	_, err := q.db.ExecContext(ctx, `INSERT INTO pallasify_job_progress
		(job_id, stage, attempt, worker, pushed_commit, pr_number, status_json, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (job_id) DO UPDATE SET stage = excluded.stage, attempt = excluded.attempt,
			worker = excluded.worker, pushed_commit = excluded.pushed_commit, pr_number = excluded.pr_number,
			status_json = excluded.status_json, updated_at = excluded.updated_at`,
		p.JobID, p.Stage, p.Attempt, p.Worker, p.PushedCommit, p.PR, status, time.Now().UTC().Format(time.RFC3339Nano))
	if err != nil {
		return fmt.Errorf("queue: record progress of job %d: %w", p.JobID, err)
	}
	return nil
}

// recordStage updates only the stage (and attempt and worker) of a job.
func (q *Queue) recordStage(ctx context.Context, id int64, stage string, attempt int, worker string) error {
	_, err := q.db.ExecContext(ctx, `UPDATE pallasify_job_progress SET stage = $1, attempt = $2, worker = $3, updated_at = $4
		WHERE job_id = $5`, stage, attempt, worker, time.Now().UTC().Format(time.RFC3339Nano), id)
	if err != nil {
		return fmt.Errorf("queue: record progress of job %d: %w", id, err)
	}
	return nil
}

// Progress returns a job's recorded progress (nil when none).
func (q *Queue) Progress(ctx context.Context, id int64) (*Progress, error) {
	var p Progress
	var status, updated string
	err := q.db.QueryRowContext(ctx, `SELECT job_id, stage, attempt, worker, pushed_commit, pr_number, status_json, updated_at
		FROM pallasify_job_progress WHERE job_id = $1`, id).
		Scan(&p.JobID, &p.Stage, &p.Attempt, &p.Worker, &p.PushedCommit, &p.PR, &status, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("queue: progress of job %d: %w", id, err)
	}
	p.UpdatedAt, _ = time.Parse(time.RFC3339Nano, updated)
	if status != "" {
		p.Status = &batch.Status{}
		if err := json.Unmarshal([]byte(status), p.Status); err != nil {
			return nil, fmt.Errorf("queue: progress of job %d: %w", id, err)
		}
	}
	return &p, nil
}

// clearProgress forgets a job's outcome before it is retried on request.
func (q *Queue) clearProgress(ctx context.Context, id int64) error {
	if _, err := q.db.ExecContext(ctx, `DELETE FROM pallasify_job_progress WHERE job_id = $1`, id); err != nil {
		return fmt.Errorf("queue: clear progress of job %d: %w", id, err)
	}
	return nil
}
