/**
 * For store implementers: the {@link dev.sluice.spi.DecisionStore} a shared store implements, the
 * {@link dev.sluice.spi.StoreRequest} it applies atomically, and {@link
 * dev.sluice.spi.StoreProtocol}, the one owner of the codes, slots and arguments its script must
 * use. {@link dev.sluice.spi.StoreReference} gives the state transitions to reproduce bit for bit.
 */
package dev.sluice.spi;
