//===- compiler/templates/Params.h - every template's parameter struct -*- C++ -*-===//
// The parameter structs of every family of templates, one header a family
// (a new family: one line here). compiler/schedule/Schedule.h makes a
// Schedule one of them, in Templates.def's order.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/templates/attention/AttentionParams.h"
#include "compiler/templates/matmul/MatmulParams.h"
#include "compiler/templates/pointwise/PointwiseParams.h"
#include "compiler/templates/rows/RowsParams.h"
#include "compiler/templates/scan/ScanParams.h"
