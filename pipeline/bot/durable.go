package bot

import (
	"context"
	"fmt"
	"time"
)

// JobQueue keeps accepted jobs durably (pipeline/queue's BotQueue on River),
// so a restart loses nothing; its workers call Server.RunJob. Without one
// the server keeps jobs in memory (Options.Queue of them).
type JobQueue interface {
	// Enqueue stores j; false when the same job (delivery, kind, repository)
	// was stored before.
	Enqueue(ctx context.Context, j Job) (bool, error)
}

// Job is a webhook job in a durable queue. The river:"unique" fields are its
// identity: one job per delivery and repository, whatever GitHub redelivers.
type Job struct {
	Kind     string `json:"kind" river:"unique"`
	Delivery string `json:"delivery" river:"unique"`
	Inst     int64  `json:"installation"`
	Owner    string `json:"owner" river:"unique"`
	Repo     string `json:"repo" river:"unique"`
	CloneURL string `json:"clone_url,omitempty"`
	Base     string `json:"base,omitempty"`
	Number   int    `json:"number,omitempty"`
	User     string `json:"user,omitempty"`
	Command  string `json:"command,omitempty"`
	Arg      string `json:"arg,omitempty"`
}

func exportJob(j job) Job {
	return Job{Kind: j.kind, Delivery: j.delivery, Inst: j.inst, Owner: j.owner, Repo: j.repo, CloneURL: j.cloneURL,
		Base: j.base, Number: j.number, User: j.user, Command: j.command, Arg: j.arg}
}

func (j Job) internal() job {
	return job{kind: j.Kind, delivery: j.Delivery, inst: j.Inst, owner: j.Owner, repo: j.Repo, cloneURL: j.CloneURL,
		base: j.Base, number: j.Number, user: j.User, command: j.Command, arg: j.Arg}
}

// enqueueDurable stores j in the durable queue.
func (s *Server) enqueueDurable(j job) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.opts.Jobs.Enqueue(ctx, exportJob(j)); err != nil {
		s.log.Error("durable queue", "err", s.opts.Secrets.String(err.Error()))
		return false
	}
	return true
}

// RunJob runs one job taken from a durable queue, with the per-job timeout,
// and returns its error (logged as the in-memory pool logs it).
func (s *Server) RunJob(parent context.Context, dj Job) (err error) {
	j := dj.internal()
	ctx, cancel := context.WithTimeout(parent, s.opts.JobTimeout)
	defer cancel()
	log := s.log.With("delivery", j.delivery, "repo", j.owner+"/"+j.repo, "job", j.kind, "command", j.command)
	start := time.Now()
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("job panicked: %v", r)
			}
		}()
		err = s.do(ctx, j, log)
	}()
	if err != nil {
		log.Error("job failed", "err", err, "seconds", time.Since(start).Seconds())
		return err
	}
	log.Info("job done", "seconds", time.Since(start).Seconds())
	return nil
}
