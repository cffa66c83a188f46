//===- Status.cpp - Errors with messages ----------------------------------===//

#include "tessel/Runtime.h"

using namespace tessel;

Status Status::error(std::string message) {
  Status s;
  s.failed = true;
  s.msg = message.empty() ? "unknown error" : std::move(message);
  return s;
}

Status &Status::prepend(std::string_view context) {
  if (failed)
    msg.insert(0, context);
  return *this;
}
