// Everything gizml offers, in one include.
#pragma once

#include "gizml/device.hpp"
#include "gizml/dtype.hpp"
#include "gizml/error.hpp"
#include "gizml/gpu.hpp"
#include "gizml/key.hpp"
#include "gizml/lazy.hpp"
#include "gizml/netops.hpp"
#include "gizml/tensor.hpp"
#include "gizml/threads.hpp"
