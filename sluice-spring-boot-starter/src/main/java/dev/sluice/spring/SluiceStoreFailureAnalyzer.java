package dev.sluice.spring;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/** Prints which store Sluice could not reach at startup, and what the failure policy does. */
class SluiceStoreFailureAnalyzer extends AbstractFailureAnalyzer<SluiceStoreUnreachableException> {
  @Override
  protected FailureAnalysis analyze(Throwable rootFailure, SluiceStoreUnreachableException cause) {
    String whileRunning = switch (cause.failurePolicy()) {
      case "open" -> "admits every request (sluice.store.failure=open)";
      case "fallback" -> "decides in this JVM's memory (sluice.store.failure=fallback)";
      default -> "refuses limited requests with 503 (sluice.store.failure=closed)";
    };
    Throwable reason = cause.getCause();
    return new FailureAnalysis("Sluice could not connect to its store " + cause.store() + ": "
        + (reason == null ? cause.getMessage() : reason.getMessage()) + "\n\nThe application does"
        + " not start without a first connection to it. Once running, while the store fails,"
        + " Sluice " + whileRunning + ", and it reconnects by itself.",
        "Start the store, or point sluice.store.redis.uri (or spring.data.redis.*) at one that"
            + " runs; sluice.store.type=memory limits in this JVM alone.", cause);
  }
}
