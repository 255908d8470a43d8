// Several GPUs without a driver: the check that refuses a tensor of another
// device, which programs load on which devices, and what `minijit devices`
// says of a GPU.
#include "runtime/Executable.h"
#include "tests/support/Expect.h"
#include "tools/DeviceReport.h"

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

TEST(MultiDevice, TheDeviceReportGivesWhatTheSchedulesUse) {
  DeviceFacts f;
  f.ordinal = 1;
  f.properties.name = "NVIDIA H200";
  f.properties.totalMemory = int64_t(150) << 30;
  f.freeBytes = int64_t(149) << 30;
  f.copyGBps = 4012.4;
  EXPECT_EQ(describeDevice(f),
            "device 1: NVIDIA H200\n"
            "  compute capability 9.0 (sm_90), 132 SMs at 1980 MHz\n"
            "  shared memory: 48 KiB per block (227 KiB opted in), 228 KiB per SM\n"
            "  registers: 65536 per block, 65536 per SM; threads: 1024 per block, 2048 per SM; "
            "at most 32 blocks per SM\n"
            "  L2: 60 MiB; memory: 150.0 GiB (149.0 GiB free)\n"
            "  peak rates: f32 on CUDA cores 66.9 TFLOP/s; f16 on tensor cores 1070.5 TFLOP/s; "
            "bf16 on tensor cores 1070.5 TFLOP/s (from the SM clock)\n"
            "  copy bandwidth: 4012 GB/s (a device-to-device copy, measured)\n");
}

TEST(MultiDevice, TheDeviceReportSaysWhatIsNotKnown) {
  DeviceFacts f;
  f.properties.name = "a GPU of the future";
  f.properties.ccMajor = 12;
  f.properties.ccMinor = 1;
  std::string text = describeDevice(f);
  EXPECT_NE(text.find("compute capability 12.1 (sm_121)"), std::string::npos) << text;
  EXPECT_NE(text.find("memory: unknown\n"), std::string::npos) << text;
  EXPECT_NE(text.find("peak rates: not known for sm_121\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("copy bandwidth"), std::string::npos) << text;
}
