#include "trace/trace-hw_display_pagoda.h"
