module github.com/phalanx-sched/phalanx

go 1.26
