package a

// Small has 15 methods: within the line.
type Small struct{}

// Big has 16 methods and no reason.
type Big struct{}

// Reasoned has 18.
//
// Cohesive: one job that reads better whole.
type Reasoned struct{}

// Huge has 21, over the hard line whatever it says.
//
// Cohesive: no reason holds above 20.
type Huge struct{}

// Gen has 16 over T, *T and type parameters.
type Gen[K comparable, V any] struct{}

type (
	// Grouped has 16, declared in a group.
	Grouped int
	Fine    int
)

func (Small) m0()        {}
func (Small) m1()        {}
func (Small) m2()        {}
func (Small) m3()        {}
func (Small) m4()        {}
func (Small) m5()        {}
func (Small) m6()        {}
func (Small) m7()        {}
func (Small) m8()        {}
func (Small) m9()        {}
func (Small) m10()       {}
func (Small) m11()       {}
func (Small) m12()       {}
func (Small) m13()       {}
func (Small) m14()       {}
func (*Big) m0()         {}
func (*Big) m1()         {}
func (*Big) m2()         {}
func (*Big) m3()         {}
func (*Big) m4()         {}
func (*Big) m5()         {}
func (*Big) m6()         {}
func (*Big) m7()         {}
func (Big) v0()          {}
func (Big) v1()          {}
func (Big) v2()          {}
func (Big) v3()          {}
func (Big) v4()          {}
func (Big) v5()          {}
func (Big) v6()          {}
func (Big) v7()          {}
func (*Reasoned) m0()    {}
func (*Reasoned) m1()    {}
func (*Reasoned) m2()    {}
func (*Reasoned) m3()    {}
func (*Reasoned) m4()    {}
func (*Reasoned) m5()    {}
func (*Reasoned) m6()    {}
func (*Reasoned) m7()    {}
func (*Reasoned) m8()    {}
func (*Reasoned) m9()    {}
func (*Reasoned) m10()   {}
func (*Reasoned) m11()   {}
func (*Reasoned) m12()   {}
func (*Reasoned) m13()   {}
func (*Reasoned) m14()   {}
func (*Reasoned) m15()   {}
func (*Reasoned) m16()   {}
func (*Reasoned) m17()   {}
func (h *Huge) m0()      {}
func (h *Huge) m1()      {}
func (h *Huge) m2()      {}
func (h *Huge) m3()      {}
func (h *Huge) m4()      {}
func (h *Huge) m5()      {}
func (h *Huge) m6()      {}
func (h *Huge) m7()      {}
func (h *Huge) m8()      {}
func (h *Huge) m9()      {}
func (h *Huge) m10()     {}
func (h *Huge) m11()     {}
func (h *Huge) m12()     {}
func (h *Huge) m13()     {}
func (h *Huge) m14()     {}
func (h *Huge) m15()     {}
func (h *Huge) m16()     {}
func (h *Huge) m17()     {}
func (h *Huge) m18()     {}
func (h *Huge) m19()     {}
func (h *Huge) m20()     {}
func (g *Gen[K, V]) m0() {}
func (g *Gen[K, V]) m1() {}
func (g *Gen[K, V]) m2() {}
func (g *Gen[K, V]) m3() {}
func (g *Gen[K, V]) m4() {}
func (g *Gen[K, V]) m5() {}
func (g *Gen[K, V]) m6() {}
func (g *Gen[K, V]) m7() {}
func (g Gen[K, V]) v0()  {}
func (g Gen[K, V]) v1()  {}
func (g Gen[K, V]) v2()  {}
func (g Gen[K, V]) v3()  {}
func (g Gen[K, V]) v4()  {}
func (g Gen[K, V]) v5()  {}
func (g Gen[K, V]) v6()  {}
func (g Gen[K, V]) v7()  {}
func (Grouped) m0()      {}
func (Grouped) m1()      {}
func (Grouped) m2()      {}
func (Grouped) m3()      {}
func (Grouped) m4()      {}
func (Grouped) m5()      {}
func (Grouped) m6()      {}
func (Grouped) m7()      {}
func (Grouped) m8()      {}
func (Grouped) m9()      {}
func (Grouped) m10()     {}
func (Grouped) m11()     {}
func (Grouped) m12()     {}
func (Grouped) m13()     {}
func (Grouped) m14()     {}
func (Grouped) m15()     {}
func (Fine) m0()         {}
func (Fine) m1()         {}
