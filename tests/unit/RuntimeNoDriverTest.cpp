// The runtime on a machine without a CUDA driver: clear reports, CudaError, nothing crashes.
#include "ir/Error.h"
#include "runtime/Device.h"
#include "runtime/Driver.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <string>

using namespace minijit;

namespace {

/// True when this machine has a driver library; the tests below are about
/// machines without one.
bool driverPresent() {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return false;
  dlclose(h);
  return true;
}

} // namespace

TEST(RuntimeNoDriver, DeviceIsUnavailableWithAReason) {
  if (driverPresent())
    GTEST_SKIP() << "libcuda.so.1 is present on this machine";
  std::string why;
  EXPECT_FALSE(Device::available(&why));
  EXPECT_EQ(why.rfind("no CUDA driver found (libcuda.so.1: ", 0), 0u) << why;
  EXPECT_EQ(why.find("libcuda.so.1", why.find("libcuda.so.1") + 1), std::string::npos)
      << "the library is named once: " << why;
  EXPECT_FALSE(Device::available()); // no out-parameter: still no crash
  std::string again;
  EXPECT_FALSE(Driver::available(&again));
  EXPECT_EQ(again, why);
}

TEST(RuntimeNoDriver, OpeningADeviceThrowsCudaError) {
  if (driverPresent())
    GTEST_SKIP() << "libcuda.so.1 is present on this machine";
  try {
    Device::open();
    FAIL() << "Device::open() returned without a driver";
  } catch (const CudaError &e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("no CUDA driver found", 0), 0u) << msg;
    EXPECT_NE(msg.find("libcuda.so.1"), std::string::npos) << msg;
  }
  EXPECT_THROW(Device::open(3), CudaError);
}

TEST(RuntimeNoDriver, DriverGetThrowsCudaErrorEveryTime) {
  if (driverPresent())
    GTEST_SKIP() << "libcuda.so.1 is present on this machine";
  EXPECT_THROW(Driver::get(), CudaError);
  EXPECT_THROW(Driver::get(), CudaError);
  try {
    Driver::get();
  } catch (const Error &e) { // a minijit::Error, so tools report it uniformly
    EXPECT_NE(std::string(e.what()).find("no CUDA driver found"), std::string::npos);
  }
}
