// Several GPUs without a driver: the check that refuses a tensor of another
// device, and which programs load on which devices.
#include "runtime/Executable.h"
#include "tests/support/Expect.h"

#include <gtest/gtest.h>

using namespace minijit;

TEST(MultiDevice, ATensorOfAnotherDeviceIsRefusedWithBothOrdinals) {
  EXPECT_EQ(graphErrorOf([] { checkTensorDevice("run", "input", "x", 0, 1); }),
            "run: input %x is on device 0 but the executable runs on device 1");
  EXPECT_EQ(graphErrorOf([] { checkTensorDevice("enqueue", "output", "y.grad", 3, 0); }),
            "enqueue: output %y.grad is on device 3 but the executable runs on device 0");
}

TEST(MultiDevice, ATensorOfTheSameDeviceIsTaken) {
  EXPECT_NO_THROW(checkTensorDevice("run", "input", "x", 0, 0));
  EXPECT_NO_THROW(checkTensorDevice("bind", "output", "y", 7, 7));
}

TEST(MultiDevice, AProgramLoadsOnDevicesOfItsArchitecture) {
  Program p;
  DeviceProperties hopper; // sm_90
  DeviceProperties ampere;
  ampere.ccMajor = 8;
  ampere.ccMinor = 0;
  DeviceProperties ada;
  ada.ccMajor = 8;
  ada.ccMinor = 9;
  p.arch = "sm_90";
  EXPECT_TRUE(loadsOn(p, hopper));
  EXPECT_FALSE(loadsOn(p, ampere));
  p.arch = "sm_90a"; // Hopper's architecture-specific kernels (wgmma, TMA)
  EXPECT_TRUE(loadsOn(p, hopper));
  EXPECT_FALSE(loadsOn(p, ampere));
  p.arch = "sm_80";
  EXPECT_TRUE(loadsOn(p, ampere));
  EXPECT_FALSE(loadsOn(p, ada)) << "a CUBIN is for one architecture, not a family";
  EXPECT_FALSE(loadsOn(p, hopper));
}
