const t0 = performance.now();
await import('/work/main/lib/runtime/runtime.js');
console.log('runtime import', performance.now()-t0);
await import('/work/main/lib/connectors/reference/payments.js');
console.log('payments', performance.now()-t0);
await import('/work/main/dev/payments-simulator/server.js');
await import('/work/main/dev/scheduler-emulator/emulator.js');
await import('/work/main/dev/emulators/fauxqs.js');
console.log('dev', performance.now()-t0);
