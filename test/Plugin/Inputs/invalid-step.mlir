// A step whose batch cannot be split as its schedule asks.

func.func @g(%x: tensor<6x2xf32>) -> tensor<f32> {
  %l = train.step batch(%x : tensor<6x2xf32>) attributes {microbatches = 4 : i64} -> tensor<f32> {
  ^bb0(%a: tensor<6x2xf32>):
    %c = arith.constant dense<0.0> : tensor<f32>
    train.yield %c : tensor<f32>
  }
  return %l : tensor<f32>
}
