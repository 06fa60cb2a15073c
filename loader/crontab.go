package loader

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/robfig/cron/v3"
)

// cronParser reads crontabs with seconds, and descriptors.
var cronParser = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseSchedules reads schedule entries, the same in v0 and v1.
func parseSchedules(raw json.RawMessage, cfg *HookConfig) error {
	var entries []struct {
		Name                 string   `json:"name"`
		Crontab              string   `json:"crontab"`
		AllowFailure         bool     `json:"allowFailure"`
		Queue                string   `json:"queue"`
		Group                string   `json:"group"`
		IncludeSnapshotsFrom []string `json:"includeSnapshotsFrom"`
	}
	if err := decodeStrict(raw, &entries); err != nil {
		return fmt.Errorf("want a list of {name, crontab, allowFailure, queue, group, includeSnapshotsFrom}: %w", err)
	}
	for i, e := range entries {
		if e.Crontab == "" {
			return fmt.Errorf("entry %d: crontab is required", i+1)
		}
		sched, err := ParseCrontab(e.Crontab)
		if err != nil {
			return fmt.Errorf("entry %d: %w", i+1, err)
		}
		name := e.Name
		if name == "" {
			name = Schedule
		}
		cfg.Schedules = append(cfg.Schedules, ScheduleBinding{
			Name: name, Crontab: e.Crontab, AllowFailure: e.AllowFailure, Queue: e.Queue,
			Group: e.Group, IncludeSnapshotsFrom: e.IncludeSnapshotsFrom, Schedule: sched,
		})
	}
	return nil
}

// ParseCrontab parses a 6-field crontab with seconds, a 5-field one
// (minutes; it fires at second 0, as shell-operator reads it, so hooks
// written for the original keep their schedules), or a descriptor
// (@every 10s, @daily). Day-of-week accepts 1–7 with 7 for Sunday, as
// docs/operator.md documents ("Events"), besides cron's 0–6.
func ParseCrontab(spec string) (cron.Schedule, error) {
	fields := strings.Fields(spec)
	if len(fields) == 5 {
		fields = append([]string{"0"}, fields...)
	}
	if len(fields) == 6 {
		dow, err := sundayAsSeven(fields[5])
		if err != nil {
			return nil, fmt.Errorf("crontab %q: %w", spec, err)
		}
		fields[5] = dow
	} else if !strings.HasPrefix(spec, "@") {
		return nil, fmt.Errorf("crontab %q: want 6 fields (second minute hour day-of-month month day-of-week) or 5 (without seconds), got %d", spec, len(fields))
	}
	s, err := cronParser.Parse(strings.Join(fields, " "))
	if err != nil {
		return nil, fmt.Errorf("crontab %q: %w", spec, err)
	}
	return s, nil
}

// sundayAsSeven rewrites the parts of a day-of-week field that use 7 into
// cron's numbering (7 → 0), expanding ranges that end at 7.
func sundayAsSeven(field string) (string, error) {
	parts := strings.Split(field, ",")
	var out []string
	for _, p := range parts {
		rng, step, hasStep := strings.Cut(p, "/")
		lo, hi, isRange := strings.Cut(rng, "-")
		if !isRange {
			if rng == "7" {
				out = append(out, "0")
			} else {
				out = append(out, p)
			}
			continue
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || b != 7 {
			out = append(out, p)
			continue
		}
		n := 1
		if hasStep {
			var err error
			if n, err = strconv.Atoi(step); err != nil || n < 1 {
				return "", fmt.Errorf("day-of-week step %q", step)
			}
		}
		for d := a; d <= b; d += n {
			out = append(out, strconv.Itoa(d%7))
		}
	}
	return strings.Join(out, ","), nil
}
