// Package launch is the run side of ipustack: it runs an application
// package on a device and checks it, from the package alone.
//
// Run packs the host tensors by the layouts the package records
// (ipuexe.Binding.Layout; seeded data from the workload graph or the
// user's), runs the package's calls through the runtime on a device,
// unpacks the output, compares it with the host reference (package
// reference, at device precision) and computes the metrics line. With a
// profile file it also writes the run profile (package profile): the
// cycle samples the run read, laid over what the package says about its
// steps, exchange phases, memory maps and plan (ipuexe.RunInfo).
//
// launch imports ipuexe, device, runtime, reference, profile and graph,
// never compiler/...: running a package neither plans nor schedules. The
// compiler (compiler/driver) in turn imports nothing under device/ nor
// runtime (TestImportRules checks both rules).
package launch
