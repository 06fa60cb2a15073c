package nested

type T struct{}

func (T) m0()  {}
func (T) m1()  {}
func (T) m2()  {}
func (T) m3()  {}
func (T) m4()  {}
func (T) m5()  {}
func (T) m6()  {}
func (T) m7()  {}
func (T) m8()  {}
func (T) m9()  {}
func (T) m10() {}
func (T) m11() {}
func (T) m12() {}
func (T) m13() {}
func (T) m14() {}
func (T) m15() {}
func (T) m16() {}
func (T) m17() {}
func (T) m18() {}
func (T) m19() {}
func (T) m20() {}
func (T) m21() {}
func (T) m22() {}
func (T) m23() {}
func (T) m24() {}
func (T) m25() {}
func (T) m26() {}
func (T) m27() {}
func (T) m28() {}
func (T) m29() {}
