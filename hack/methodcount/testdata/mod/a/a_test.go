package a

// Small gains methods in tests, which count with -tests only.
func (Small) t0() {}
func (Small) t1() {}
func (Small) t2() {}
