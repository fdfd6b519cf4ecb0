package dev.sluice.spring;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/** Prints what is wrong with Sluice's settings when the application cannot start. */
class SluiceFailureAnalyzer extends AbstractFailureAnalyzer<SluiceConfigurationException> {
  @Override
  protected FailureAnalysis analyze(Throwable rootFailure, SluiceConfigurationException cause) {
    return new FailureAnalysis("Sluice's settings are invalid:\n\n    "
        + String.join("\n    ", cause.problems()) + "\n",
        "Correct the sluice.* properties named above (docs/spring.md describes each).", cause);
  }
}
