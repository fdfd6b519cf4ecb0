/** grpc-java interceptors for Sluice's limits (grpc-api is an automatic module). */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module dev.sluice.grpc {
  requires transitive dev.sluice;
  requires transitive io.grpc;

  exports dev.sluice.grpc;
}
