//===- PassRegistration.cpp - anchor for the tessel pass library ----------===//

#include "tessel/Passes.h"
