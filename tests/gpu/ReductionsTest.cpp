//===- tests/gpu/ReductionsTest.cpp - reductions, fused and not, on the GPU ===//
#include "tests/gpu/GpuTest.h"

namespace minijit {
namespace {

class Reductions : public GpuTest {
protected:
  /// Runs a graph whose one kernel splits its rows across blocks four times
  /// on one executable, twice under graph replay: the row counters must reset
  /// themselves for the next launch.
  void expectSplitRunsRepeat(const Graph &g, bool waits, unsigned cluster = 1,
                             const std::string &overrides = "") {
    if (!Gpu)
      return;
    CompileOptions opt;
    opt.device = gpu().properties();
    opt.scheduleOverrides = *parseScheduleOverrides(overrides);
    CompiledGraph cg = compileGraph(g, opt);
    ASSERT_EQ(cg.program.kernels.size(), 1u) << cg.fusedText();
    EXPECT_GT(cg.program.kernels[0].workspaceBytes, 0) << cg.fusedText();
    EXPECT_EQ(cg.program.kernels[0].coResident, waits) << cg.fusedText();
    EXPECT_EQ(cg.program.kernels[0].cluster, cluster) << cg.fusedText();
    EXPECT_EQ(cg.program.kernels[0].resources.spillStores, 0u) << cg.fusedText();
    std::vector<HostTensor> in = randomInputs(g, 12);
    std::vector<HostTensor> ref = evaluate(g, in);
    Executable exe(gpu(), cg.program);
    std::vector<DeviceTensor> din{DeviceTensor::fromHost(gpu(), in[0])};
    for (int run = 0; run < 4; ++run) {
      exe.setGraphReplay(run >= 2);
      std::vector<DeviceTensor> dout = exe.allocateOutputs();
      poisonTensors(dout);
      exe.enqueue(din, dout);
      exe.synchronize();
      for (size_t i = 0; i < dout.size(); ++i) {
        CompareResult cr = compareTensors(dout[i].download(), ref[i], toleranceFor(g, g.outputs()[i]));
        EXPECT_TRUE(cr.ok) << "run " << run << " output " << i << ": " << cr.summary;
      }
    }
  }
};

/// Runs `g` fused and unfused under the schedule overrides `overrides`
/// against the reference (compiled only, without a GPU).
void expectMatchesUnder(const Graph &g, const std::string &overrides, uint64_t seed,
                        const std::optional<Device> &gpu) {
  for (int fused = 1; fused >= 0; --fused) {
    CompileOptions opt;
    opt.fusion = fused;
    opt.scheduleOverrides = *parseScheduleOverrides(overrides);
    if (!gpu) {
      EXPECT_NO_THROW(compileGraph(g, opt)) << overrides << "\n" << printGraph(g);
      continue;
    }
    CheckedRun r = runAndCheck(g, *gpu, opt, seed);
    for (size_t i = 0; i < r.compare.size(); ++i)
      EXPECT_TRUE(r.compare[i].ok) << "graph " << g.name() << " under " << overrides << " (fusion "
                                   << (fused ? "on" : "off") << ") output %"
                                   << g.node(g.outputs()[i]).name << ": " << r.compare[i].summary
                                   << "\n" << r.compiled.fusedText();
  }
}

/// What a model reads off the rows of x: a logsumexp (an output per row),
/// the softmax (per element, in x's dtype), the argmax, and with
/// `sumOfSquares` the sums of squares.
Graph rowStatistics(const char *name, DType t, const Shape &s, bool sumOfSquares) {
  Graph g(name);
  Tensor x = g.input("x", t, s);
  Tensor xf = t == DType::F32 ? x : x.cast(DType::F32);
  Tensor m = max(xf, {1}, true);
  g.output(log(sum(exp(xf - m), {1})) + m.reshape({s[0]}), "lse");
  g.output(softmax(xf, 1).cast(t), "p");
  g.output(argmax(x, 1), "at");
  if (sumOfSquares)
    g.output(sum(xf * xf, {1}), "ss");
  return g;
}

const std::vector<std::vector<int64_t>> kAxisSets = {{0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}};

TEST_F(Reductions, EveryAxisCombinationOfA3DTensor) {
  const OpKind ops[] = {OpKind::Sum, OpKind::Mean, OpKind::Max, OpKind::Min, OpKind::Prod};
  for (Shape s : {Shape{5, 7, 9}, Shape{33, 65, 129}})
    for (OpKind op : ops)
      for (const auto &axes : kAxisSets)
        for (bool keepdim : {false, true}) {
          Graph g(std::string(opName(op)) + "_3d");
          Tensor x = g.input("x", DType::F32, s);
          // prod of many values under- or overflows; scale them near 1
          Tensor v = op == OpKind::Prod ? 1.0 + 0.05 * x : x;
          g.output(reduce(op, v, axes, keepdim), "y");
          expectMatches(g, 3, /*fusedOnly=*/true);
        }
}

TEST_F(Reductions, IntegerAndHalfReductions) {
  for (DType t : {DType::I32, DType::F16, DType::BF16})
    for (OpKind op : {OpKind::Sum, OpKind::Max, OpKind::Min})
      for (const auto &axes : kAxisSets) {
        Graph g(std::string(opName(op)) + "_" + std::string(dtypeName(t)));
        Tensor x = g.input("x", t, {17, 33, 65});
        g.output(reduce(op, x, axes), "y");
        expectMatches(g, 5, /*fusedOnly=*/true);
      }
}

TEST_F(Reductions, NormalizeOverEveryAxisSet) {
  // A reduction broadcast back over its rows: one kernel when fused.
  for (const auto &axes : kAxisSets) {
    Graph g("norm");
    Tensor x = g.input("x", DType::F32, {17, 33, 65});
    Tensor m = max(x, axes, true);
    Tensor e = exp(x - m);
    g.output(e / sum(e, axes, true), "y");
    expectMatches(g, 9);
  }
}

TEST_F(Reductions, RowLengthsAcrossSchedules) {
  // Sub-warp, warp, block per row with the row in registers, and looped rows.
  for (int64_t n : {1, 3, 31, 128, 1000, 1024, 1025, 4096, 8192, 32768, 100003})
    for (int64_t rows : {1, 7, 300}) {
      if (rows * n > (int64_t(1) << 24))
        continue;
      Graph g("softmax_rows");
      Tensor x = g.input("x", DType::F32, {rows, n});
      Tensor m = max(x, {1}, true);
      Tensor e = exp(x - m);
      g.output(e / sum(e, {1}, true), "y");
      g.output(log(sum(e, {1})) + m.reshape({rows}), "lse");
      expectMatches(g, static_cast<uint64_t>(n + rows));
    }
}

TEST_F(Reductions, RowsThatStartMidVector) {
  // Row lengths no vector width divides: vectors aligned to memory, a row's
  // first and last partly its neighbours', their lanes masked. A layer norm
  // reads its weight lane by lane; a slice starts each row one element in
  // (and stores its output, laid out otherwise, lane by lane); argmax and an
  // iota need each lane's true position.
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (int64_t n : {int64_t(999), int64_t(3001), int64_t(50257)}) {
      int64_t rows = n > 10000 ? 19 : 37;
      Graph g("mid_vector_rows");
      Tensor x = g.input("x", t, {rows, n});
      Tensor w = g.input("w", t, {n});
      Tensor xf = t == DType::F32 ? x : x.cast(DType::F32);
      Tensor wf = t == DType::F32 ? w : w.cast(DType::F32);
      Tensor d = xf - mean(xf, {1}, true);
      g.output((d * rsqrt(mean(d * d, {1}, true) + 1e-5) * wf).cast(t), "ln");
      g.output(argmax(x, 1), "at");
      g.output(sum(xf * iota(g, {rows, n}, 1, DType::F32), {1}), "weighted");
      Tensor inner = slice(xf, 1, 1, n - 1);
      g.output((inner - max(inner, {1}, true)).cast(t), "shifted");
      SCOPED_TRACE(std::string(dtypeName(t)) + " rows of " + std::to_string(n));
      expectMatches(g, static_cast<uint64_t>(n));
    }
}

TEST_F(Reductions, OnlineSoftmaxAtInfinitiesAndNaN) {
  // The sum of exp(x - max) runs in the max's pass, rescaled as the max
  // grows: rows with some -inf (log of 0), all -inf, a +inf (1/0), NaN
  // (sqrt of a negative) and huge spreads must give what the two-pass
  // reference gives: zeros, NaN, NaN, NaN and one-hot rows. Long rows too,
  // whose blocks combine (sum, max) pairs, and rows split over blocks.
  // The spread is a power of two (2^40), so the product is exact: NVRTC
  // contracts x * c - max into an fma, which at the max leaves the product's
  // rounding error, about 1e23 for c = 1e30, and exp of that is inf.
  for (Shape s : {Shape{37, 1000}, Shape{5, 65537}, Shape{2, 1 << 20}}) {
    Graph g("online_edges");
    Tensor x = g.input("x", DType::F32, s);
    Tensor cases[] = {log(relu(x)), log(relu(x - 100.0)), 1.0 / relu(x), sqrt(x),
                      x * 1099511627776.0, x};
    const char *names[] = {"some_ninf", "all_ninf", "pinf", "nan", "huge", "plain"};
    for (int c = 0; c < 6; ++c) {
      Tensor v = cases[c];
      Tensor m = max(v, {1}, true);
      g.output(softmax(v, 1), std::string("p_") + names[c]);
      g.output(log(sum(exp(v - m), {1})) + m.reshape({s[0]}), std::string("lse_") + names[c]);
    }
    SCOPED_TRACE(s.str());
    expectMatches(g, static_cast<uint64_t>(s[1]));
  }
}

TEST_F(Reductions, ColumnReductionsWithEpilogue) {
  for (Shape s : {Shape{1000, 33}, Shape{65, 4097}, Shape{3, 5}}) {
    Graph g("colnorm");
    Tensor x = g.input("x", DType::F32, s);
    Tensor mu = mean(x, {0}, true);
    Tensor d = x - mu;
    Tensor var = mean(d * d, {0}, true);
    g.output(d * rsqrt(var + 1e-5), "y");
    g.output(mu, "mu");
    expectMatches(g, 2);
  }
}

TEST_F(Reductions, FullReductionOfALongVector) {
  for (int64_t n : {int64_t(1), int64_t(1025), (int64_t(1) << 20) + 7}) {
    Graph g("total");
    Tensor x = g.input("x", DType::F32, {n});
    g.output(sum(x), "s");
    g.output(max(abs(x)), "m");
    expectMatches(g, 4);
  }
}

TEST_F(Reductions, ChainsLongerThan32PassesSplitIntoKernels) {
  // Each mean needs the one before it: 40 passes over the same rows do not
  // fit one kernel (at most 32), so the chain is split where it must be.
  for (Shape s : {Shape{4, 8}, Shape{3, 1000}}) {
    Graph g("mean_chain");
    Tensor x = g.input("x", DType::F32, s);
    Tensor t = x;
    for (int i = 0; i < 40; ++i)
      t = x - 0.5 * mean(t, {1}, true);
    g.output(t, "y");
    expectMatches(g, 13);
  }
}

TEST_F(Reductions, FewLongRowsSplitAcrossBlocks) {
  // Rows long enough and few enough that each is split over many blocks; the
  // last block of a row combines the partials, so the result must also hold
  // when the same executable runs again (the row counters reset themselves)
  // and under graph replay.
  struct Case {
    DType t;
    Shape s;
  };
  for (const Case &c : {Case{DType::F32, {(int64_t(1) << 24) + 3}}, Case{DType::F32, {3, 1 << 22}},
                        Case{DType::F16, {7, 1000003}}, Case{DType::I32, {2, 3000001}}}) {
    Graph g("split_rows");
    Tensor x = g.input("x", c.t, c.s);
    int64_t last = static_cast<int64_t>(c.s.rank()) - 1;
    if (c.t == DType::I32) {
      g.output(sum(x, {last}), "s");
      g.output(max(x, {last}), "mx");
    } else {
      Tensor xf = c.t == DType::F32 ? x : x.cast(DType::F32);
      g.output(sqrt(mean(xf * xf, {last}) + 1e-6), "rms"); // a prologue and an epilogue
      g.output(max(x, {last}), "mx");
      g.output(sum(x, {last}), "s");
    }
    expectMatches(g, 11, /*fusedOnly=*/true);
    expectSplitRunsRepeat(g, /*waits=*/false);
  }
}

TEST_F(Reductions, FewLongRowsOfSeveralPassesMeetAcrossBlocks) {
  // Softmax, a layer norm and a whole-tensor sum that divides: passes that
  // need the previous pass's result over the whole row, split over blocks
  // that meet after each pass. Odd lengths leave the last chunk short; the
  // f16 softmax and the short sum keep their chunk in registers.
  struct Case {
    DType t;
    Shape s;
    const char *what;
  };
  for (const Case &c : {Case{DType::F32, {1, (int64_t(1) << 22) + 5}, "softmax"},
                        Case{DType::F16, {3, 1000003}, "softmax"},
                        Case{DType::F32, {16, (int64_t(1) << 20) + 3}, "layernorm"},
                        Case{DType::BF16, {7, 262147}, "layernorm"},
                        Case{DType::F32, {1000, 999}, "sumdiv"},
                        Case{DType::F32, {4097, 4099}, "sumdiv"}}) {
    Graph g(c.what);
    Tensor x = g.input("x", c.t, c.s);
    Tensor xf = c.t == DType::F32 ? x : x.cast(DType::F32);
    std::string name = c.what;
    if (name == "softmax") {
      g.output(softmax(xf, 1).cast(c.t), "y");
    } else if (name == "layernorm") {
      Tensor d = xf - mean(xf, {1}, true);
      g.output((d * rsqrt(mean(d * d, {1}, true) + 1e-5)).cast(c.t), "y");
    } else {
      g.output(xf / sum(xf, {0, 1}, true), "y");
      g.output(max(xf, {0, 1}), "mx");
    }
    SCOPED_TRACE(name + " " + std::string(dtypeName(c.t)) + c.s.str());
    expectMatches(g, 17, /*fusedOnly=*/true);
    expectSplitRunsRepeat(g, /*waits=*/true);
  }
}

TEST_F(Reductions, FewLongColumnsOfSeveralPassesMeetAcrossBlocks) {
  // Columns read in several passes, too few to fill the SMs a group of 32
  // a block (a batch norm's statistics in training over [204800, 32], a
  // softmax over the first axis, an argmax after a mean), split over
  // blocks that meet after each pass: groups cut short (33, 100 columns),
  // column lengths the blocks do not divide, f16 loads, outputs of each
  // element in the last pass. The counters reset themselves for the next
  // launch and for graph replay.
  struct Case {
    DType t;
    Shape s;
    const char *what;
  };
  for (const Case &c :
       {Case{DType::F32, {204800, 32}, "batchnorm"}, Case{DType::F16, {50001, 100}, "batchnorm"},
        Case{DType::F32, {65537, 40}, "softmax"}, Case{DType::F32, {20011, 33}, "argmax"},
        Case{DType::F32, {3001, 64}, "batchnorm"}}) {
    Graph g(c.what);
    Tensor x = g.input("x", c.t, c.s);
    Tensor xf = c.t == DType::F32 ? x : x.cast(DType::F32);
    std::string name = c.what;
    if (name == "batchnorm") {
      Tensor mu = mean(xf, {0}, true);
      Tensor d = xf - mu;
      Tensor var = mean(d * d, {0}, true);
      g.output((d * rsqrt(var + 1e-5)).cast(c.t), "y");
      g.output(mu, "mu");
      g.output(var, "var");
    } else if (name == "softmax") {
      g.output(softmax(xf, 0), "y");
    } else {
      g.output(argmax(abs(xf - mean(xf, {0}, true)), 0), "at");
    }
    SCOPED_TRACE(name + " " + std::string(dtypeName(c.t)) + c.s.str());
    if (Gpu) {
      CompileOptions opt;
      opt.device = gpu().properties();
      std::string fused = compileGraph(g, opt).fusedText();
      EXPECT_NE(fused.find("outer column"), std::string::npos) << fused;
      EXPECT_NE(fused.find("all resident, meeting after each pass"), std::string::npos) << fused;
    }
    expectMatches(g, 29, /*fusedOnly=*/true);
    expectSplitRunsRepeat(g, /*waits=*/true);
  }
  // by hand: 3 blocks a group; more than the SMs hold at once is refused
  Graph g("batchnorm_by_hand");
  Tensor x = g.input("x", DType::F32, {4099, 64});
  Tensor d = x - mean(x, {0}, true);
  g.output(mean(d * d, {0}, true), "var");
  expectSplitRunsRepeat(g, /*waits=*/true, 1, "splits=3");
  CompileOptions opt;
  opt.compileKernels = false;
  opt.scheduleOverrides = *parseScheduleOverrides("splits=4000");
  try {
    compileGraph(g, opt);
    ADD_FAILURE() << "splits=4000 compiled";
  } catch (const CompileError &e) {
    EXPECT_NE(std::string(e.what()).find("all resident"), std::string::npos) << e.what();
  }
}

TEST_F(Reductions, ManyLongRowsOverClusters) {
  // Many long rows on sm_90, each split over a cluster of blocks that meet
  // at the cluster's barrier (`cluster`, by hand or by the tuner): every
  // size; rows of odd length that start mid-vector, chunks that end short, a
  // row's chunk read again in each pass (cached=0); an output per row
  // (stored by the row's first block) beside outputs per element, argmax
  // positions, 16-bit types.
  struct Case {
    DType t;
    Shape s;
    const char *overrides;
    unsigned cluster; ///< of the fused kernel
  };
  for (const Case &c : {Case{DType::F32, {264, 32768}, "rowcluster=2", 2},
                        Case{DType::F32, {150, 50257}, "rowcluster=4", 4},
                        Case{DType::BF16, {140, 50257}, "rowcluster=4", 4},
                        Case{DType::F32, {133, 65537}, "rowcluster=8", 8},
                        Case{DType::F16, {200, 12289}, "rowcluster=2", 2},
                        Case{DType::F32, {300, 40000}, "rowcluster=4,cached=0", 4}}) {
    Graph g = rowStatistics("cluster_rows", c.t, c.s, false);
    SCOPED_TRACE(std::string(dtypeName(c.t)) + c.s.str() + " " + c.overrides);
    CompileOptions look;
    look.compileKernels = false;
    look.scheduleOverrides = *parseScheduleOverrides(c.overrides);
    CompiledGraph cg = compileGraph(g, look);
    unsigned most = 1;
    for (const ProgramKernel &k : cg.program.kernels)
      most = std::max(most, k.cluster);
    EXPECT_EQ(most, c.cluster) << cg.fusedText();
    expectMatchesUnder(g, c.overrides, static_cast<uint64_t>(c.s[1]), Gpu);
  }
  // Runs repeated on one executable, and under graph replay: nothing of a
  // launch is left for the next (the workspace holds no counters).
  Graph g("cluster_softmax");
  g.output(softmax(g.input("x", DType::F32, {300, 32768}), 1), "y");
  expectSplitRunsRepeat(g, /*waits=*/false, /*cluster=*/2, "rowcluster=2");
  if (!Gpu)
    GTEST_SKIP() << "no GPU (" << WhyNot << "): compiled through NVRTC, not run";
}

TEST_F(Reductions, ManyLongRowsHeldOverAClusterByRule) {
  // Many f32 rows of 65536 or more that a block would read twice, held by
  // the rules (no override) over a cluster of blocks of 512 (rows of 65536:
  // 4; rows of 100003, mid-vector: 8) or of 1024 (rows of 262144: 8): a
  // model's row statistics (an output per row, the softmax, argmax
  // positions) and a norm, fused and unfused, against the reference.
  struct Case {
    Shape s;
    unsigned cluster; ///< of the fused kernel, by the rule
  };
  for (const Case &c : {Case{{140, 65536}, 4}, Case{{133, 100003}, 8}, Case{{132, 262144}, 8}}) {
    Graph stats = rowStatistics("held_rows", DType::F32, c.s, false);
    Graph norm("held_norm");
    Tensor x = norm.input("x", DType::F32, c.s);
    Tensor d = x - mean(x, {1}, true);
    norm.output(d * rsqrt(mean(d * d, {1}, true) + 1e-5), "y");
    for (const Graph *g : {&stats, &norm}) {
      SCOPED_TRACE(g->name() + " " + c.s.str());
      CompileOptions look;
      look.compileKernels = false;
      CompiledGraph cg = compileGraph(*g, look);
      unsigned most = 1;
      for (const ProgramKernel &k : cg.program.kernels)
        most = std::max(most, k.cluster);
      EXPECT_EQ(most, c.cluster) << cg.fusedText();
      expectMatchesUnder(*g, "", static_cast<uint64_t>(c.s[1]) + 1, Gpu);
    }
  }
  if (!Gpu)
    GTEST_SKIP() << "no GPU (" << WhyNot << "): compiled through NVRTC, not run";
}

TEST_F(Reductions, LoopedRowsLoadingVectorsAhead) {
  // Rows read in a loop with each thread loading `ahead` vectors before the
  // work on them (by default only where an online sum runs): whole groups,
  // then the vectors past the last, one at a time. Rows that start
  // mid-vector, split ones (one pass, and several that meet), an online sum
  // taking a group's values at once (the max it tracks is that sum's),
  // argmax positions and stores, in f32 and 16-bit types.
  struct Case {
    DType t;
    Shape s;
  };
  for (const Case &c : {Case{DType::F32, {67, 50257}}, Case{DType::BF16, {33, 32000}},
                        Case{DType::F16, {5, 1000003}}, Case{DType::F32, {129, 1023}}}) {
    Graph g = rowStatistics("ahead", c.t, c.s, true);
    SCOPED_TRACE(std::string(dtypeName(c.t)) + c.s.str());
    for (const char *o : {"", "ahead=3,cached=0", "ahead=8,online=1,cached=0"})
      expectMatchesUnder(g, o, static_cast<uint64_t>(c.s[1]), Gpu);
  }
  if (!Gpu)
    GTEST_SKIP() << "no GPU (" << WhyNot << "): compiled through NVRTC, not run";
}

TEST_F(Reductions, VarianceKeptOnlineByWelford) {
  // Norms and variances with the sum of squared deviations in the mean's
  // pass (Welford's update, Chan's combine; online=1 where the rule would
  // keep the passes): rows of a block (vectors merged whole), odd rows
  // (elements pushed one at a time), rows of a warp and of part of one,
  // rows that start mid-vector (a slice), 16-bit inputs, a torch.var (a Sum
  // divided apart), few rows split over blocks that pass their triples
  // through the workspace (and over a cluster's blocks), and values far
  // from zero around a small spread, where a sum of squares less n mean^2
  // would lose every digit.
  struct Case {
    DType t;
    Shape s;
    int64_t sliceFrom; ///< the rows start at this column of the input
    double offset;     ///< added to the random values
    const char *overrides;
  };
  for (const Case &c : {Case{DType::F32, {267, 50257}, 0, 0.0, "online=1"},
                        Case{DType::F32, {529, 1023}, 0, 0.0, "online=1"},
                        Case{DType::F32, {529, 1023}, 0, 0.0, "online=1,vec=1"},
                        Case{DType::F32, {300, 96}, 0, 0.0, "online=1"},
                        Case{DType::F32, {1000, 24}, 0, 0.0, "online=1"},
                        Case{DType::F32, {264, 4097}, 1, 0.0, "online=1"},
                        Case{DType::BF16, {333, 32000}, 0, 0.0, "online=1"},
                        Case{DType::F32, {140, 65536}, 0, 1000.0, "online=1"},
                        Case{DType::F16, {777, 3001}, 0, 0.0, "online=1"},
                        Case{DType::F32, {67, 50257}, 0, 0.0, "online=1"},
                        Case{DType::BF16, {5, 1000003}, 0, 0.0, "online=1"},
                        Case{DType::F32, {40, 65536}, 0, 1000.0, "online=1,cached=0"},
                        Case{DType::F32, {150, 50257}, 0, 0.0, "online=1,rowcluster=4"}}) {
    Graph g("welford");
    Tensor x = g.input("x", c.t, c.s);
    Tensor xf = c.t == DType::F32 ? x : x.cast(DType::F32);
    if (c.sliceFrom)
      xf = slice(xf, 1, c.sliceFrom, c.s[1]);
    if (c.offset != 0.0)
      xf = xf * 0.01 + c.offset;
    int64_t n = c.s[1] - c.sliceFrom;
    Tensor d = xf - mean(xf, {1}, true);
    Tensor var = mean(d * d, {1}, true);
    g.output((d * rsqrt(var + 1e-5)).cast(c.t), "y");
    g.output(var.reshape({c.s[0]}), "var");
    g.output(sum(d * d, {1}) / double(n - 1), "unbiased");
    SCOPED_TRACE(std::string(dtypeName(c.t)) + c.s.str() + " " + c.overrides);
    CompileOptions look;
    look.compileKernels = false;
    look.scheduleOverrides = *parseScheduleOverrides(c.overrides);
    CompiledGraph cg = compileGraph(g, look);
    EXPECT_TRUE(llvm::any_of(cg.detail->kernels, [](const CompiledKernel &k) {
      return llvm::any_of(k.lowered.reductions, [](const KReduction &r) { return r.welfordMean >= 0; });
    })) << cg.fusedText();
    expectMatchesUnder(g, c.overrides, static_cast<uint64_t>(c.s[1]), Gpu);
  }
  // Split rows run again on one executable and under graph replay: the
  // workspace's counters reset themselves.
  Graph g("welford_split");
  Tensor x = g.input("x", DType::F32, {12, 300007});
  Tensor d = x - mean(x, {1}, true);
  g.output(d * rsqrt(mean(d * d, {1}, true) + 1e-5), "y");
  expectSplitRunsRepeat(g, /*waits=*/true, /*cluster=*/1, "online=1");
  if (!Gpu)
    GTEST_SKIP() << "no GPU (" << WhyNot << "): compiled through NVRTC, not run";
}

TEST_F(Reductions, ShortOuterAxesSummedAsTheirSlices) {
  // An f32 sum or mean over an outer axis of 2 to 8 is the adds of its
  // slices, one pointwise kernel (split-K's sum with nn.Linear's bias and
  // ReLU); slices whose rows are not whole vectors (1001 and 1000003 wide)
  // and a tiny one; fused and one kernel an op, against the reference.
  struct Case {
    Shape s;
    int64_t axis;
    bool mean;
  };
  for (Case c : {Case{{2, 1024, 1023}, 0, false}, Case{{77, 3, 1001}, 1, true},
                 Case{{8, 5, 7}, 0, false}, Case{{2, 1000003}, 0, true}}) {
    Graph g("short");
    Tensor x = g.input("x", DType::F32, c.s);
    Tensor b = g.input("b", DType::F32, {c.s[c.s.rank() - 1]});
    Tensor r = c.mean ? mean(x, {c.axis}, true) : sum(x, {c.axis}, true);
    g.output(relu(r + b), "y");
    SCOPED_TRACE(c.s.str());
    std::string fused;
    EXPECT_EQ(kernelsOfKind(g, {ScheduleKind::OuterCol, ScheduleKind::InnerRow}, fused), 0u)
        << fused;
    expectMatches(g, static_cast<uint64_t>(c.s[c.s.rank() - 1]));
  }
}

} // namespace
} // namespace minijit
