package dev.sluice.server;

/** A request the service refuses, with its status and what to say. */
final class Refusal extends Exception {
  private static final long serialVersionUID = 1L;
  final int status;
  final Problem problem;

  Refusal(int status, Problem problem, String detail) {
    super(detail, null, false, false);
    this.status = status;
    this.problem = problem;
  }

  Refusal(Problem problem, String detail) {
    this(problem.status, problem, detail);
  }
}
