// Package changewindow owns change windows (docs/architecture.md,
// "Fleets (groundwork)"): when a new revision or settings change may
// apply on this cluster. A window is a cron start, a duration and a time
// zone; an allow window is when changes may apply (with none, any time
// may), a deny window is when they may not (a deny wins over an allow).
// Set.Decide answers, for an instant, whether a change may apply, and if
// not which window holds it and until when it is held.
//
// Schedules use the crontab syntax of hooks' schedules (5 fields, or 6
// with seconds, or a descriptor such as @daily; day-of-week 7 is Sunday)
// read on the window's wall clock. Daylight saving time: a start the
// clocks skip opens when they jump (02:30 on the night 02:00 becomes
// 03:00 opens at 03:00), a start the clocks repeat opens once, the first
// time; a duration is elapsed time, so a 4h window is open 4 hours
// whatever the clocks do in between.
//
// Package rollout wires it into the operator's gate; it imports only the
// standard library and robfig/cron.
package changewindow
