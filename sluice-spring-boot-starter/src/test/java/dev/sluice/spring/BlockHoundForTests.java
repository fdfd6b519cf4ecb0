package dev.sluice.spring;

import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingOperationError;

/**
 * BlockHound for the WebFlux tests, with every blocking call it finds printed with its stack (a
 * refused call drops the connection, so the test alone would only see an I/O error).
 */
final class BlockHoundForTests {
  private BlockHoundForTests() {}

  static synchronized void install() {
    BlockHound.install(builder -> builder.blockingMethodCallback(method -> {
      BlockingOperationError e = new BlockingOperationError(method);
      System.err.println("BlockHound: a blocking call on " + Thread.currentThread().getName());
      e.printStackTrace();
      throw e;
    }));
  }
}
