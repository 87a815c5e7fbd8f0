/* A C program that calls the linear_ce step library through the header
 * ga-compile wrote: argument and result buffers from the header's sizes,
 * one good call and one with an invalid label. */
#include "liblce.h"

#include <stdio.h>

int main(void) {
  static const int64_t in_elements[] = GA_STEP_LINEAR_CE_INPUT_ELEMENTS;
  float w[12], x[32], loss, grad[12];
  int64_t y[8] = {0, 1, 2, -100, 0, 1, 2, 0}, count;
  if (in_elements[0] != 12 || in_elements[1] != 32 || in_elements[2] != 8)
    return 2;
  for (int i = 0; i < 12; ++i)
    w[i] = 1.0f;
  for (int i = 0; i < 32; ++i)
    x[i] = 1.0f;
  const void *inputs[GA_STEP_LINEAR_CE_NUM_INPUTS] = {w, x, y};
  void *outputs[GA_STEP_LINEAR_CE_NUM_RESULTS] = {&loss, grad, &count};
  ga_status status;
  int32_t rc = ga_step_run(inputs, outputs, &status);
  printf("rc %d loss %.6f count %lld\n", (int)rc, loss, (long long)count);
  y[4] = 3;
  rc = ga_step_run(inputs, outputs, &status);
  printf("rc %d: %s\n", (int)rc, status.message);
  rc = ga_step_run(inputs, NULL, &status);
  printf("rc %d: %s\n", (int)rc, status.message);
  return 0;
}
