package other

// moduleSteps outside lifecycle is not pending.
type moduleSteps struct{}

func (*moduleSteps) m0()  {}
func (*moduleSteps) m1()  {}
func (*moduleSteps) m2()  {}
func (*moduleSteps) m3()  {}
func (*moduleSteps) m4()  {}
func (*moduleSteps) m5()  {}
func (*moduleSteps) m6()  {}
func (*moduleSteps) m7()  {}
func (*moduleSteps) m8()  {}
func (*moduleSteps) m9()  {}
func (*moduleSteps) m10() {}
func (*moduleSteps) m11() {}
func (*moduleSteps) m12() {}
func (*moduleSteps) m13() {}
func (*moduleSteps) m14() {}
func (*moduleSteps) m15() {}
