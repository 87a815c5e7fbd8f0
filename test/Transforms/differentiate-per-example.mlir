// train-differentiate's mark-per-example on the MLP example, whole (k = 1)
// and split in two micro-batches (the train.accumulate body): the forward
// products and the input's gradient product carry the batch in their rows
// (train.per_example); the weights' gradient products sum over the batch
// and stay unmarked, and so does every reduction that is not per-example.
// RUN: ga-opt %ga_src/examples/mlp.mlir --train-differentiate=mark-per-example | FileCheck %s
// RUN: sed -e 's/^\(      batch(%x, %labels : .*)\)$/\1 attributes {microbatches = 2 : i64}/' %ga_src/examples/mlp.mlir \
// RUN:   | ga-opt --train-normalize-loss --train-split-batch --train-differentiate=mark-per-example | FileCheck %s --check-prefixes=CHECK,SPLIT
// RUN: ga-opt %ga_src/examples/mlp.mlir --train-differentiate | FileCheck %s --check-prefix=OFF

// SPLIT: train.accumulate microbatches = 2
// The forward: x W1 and hidden W2.
// CHECK: linalg.matmul {train.per_example} ins(%{{.*}}, %{{.*}} : tensor<[[R:[0-9]+]]x32xf32>, tensor<32x64xf32>)
// CHECK: linalg.matmul {train.per_example} ins(%{{.*}}, %{{.*}} : tensor<[[R]]x64xf32>, tensor<64x64xf32>)
// The backward: the hidden layer's gradient g W2^T is per-example ...
// CHECK: linalg.matmul indexing_maps = {{.*}} {train.per_example} ins(%{{.*}}, %{{.*}} : tensor<[[R]]x64xf32>, tensor<64x64xf32>) outs(%{{.*}} : tensor<[[R]]x64xf32>)
// ... the weights' gradients h^T g and x^T g are sums over the batch.
// CHECK: linalg.matmul indexing_maps = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<[[R]]x64xf32>, tensor<[[R]]x64xf32>) outs(%{{.*}} : tensor<64x64xf32>)
// CHECK: linalg.matmul indexing_maps = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<[[R]]x32xf32>, tensor<[[R]]x64xf32>) outs(%{{.*}} : tensor<32x64xf32>)
// The bias gradient (a reduction over the rows) is a sum too.
// CHECK-NOT: {train.per_example}
// CHECK: return

// OFF-NOT: train.per_example
