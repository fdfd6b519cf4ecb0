/** The console's page and the document it reads (no runtime dependency beyond Sluice core). */
module dev.sluice.console {
  requires transitive dev.sluice;

  exports dev.sluice.console;
}
