package sub

// moduleSteps is pending.
type moduleSteps struct{}

// other is not.
type other struct{}

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
func (*moduleSteps) m16() {}
func (*other) m0()        {}
func (*other) m1()        {}
func (*other) m2()        {}
func (*other) m3()        {}
func (*other) m4()        {}
func (*other) m5()        {}
func (*other) m6()        {}
func (*other) m7()        {}
func (*other) m8()        {}
func (*other) m9()        {}
func (*other) m10()       {}
func (*other) m11()       {}
func (*other) m12()       {}
func (*other) m13()       {}
func (*other) m14()       {}
func (*other) m15()       {}
