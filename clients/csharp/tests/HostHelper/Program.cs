// A stand-in game for the orphan test: launches the sidecar given on its command
// line, prints "sidecar_pid=N" and "socket=PATH" and waits to be killed (SIGKILL: no finally block or
// DisposeAsync runs, so only the sidecar's own stdin/parent watch can stop it).
using System;
using System.Linq;
using System.Threading;
using GameSidecar.Client;

if (args.Length < 1)
{
    Console.Error.WriteLine("usage: HostHelper SIDECAR [ARGS...]");
    return 64;
}
var options = new SidecarProcessOptions
{
    Executable = args[0],
    Arguments = args.Skip(1).ToList(),
    HandshakeTimeout = TimeSpan.FromSeconds(60),
};
try
{
    var sidecar = await SidecarProcess.LaunchAsync(options);
    Console.WriteLine($"sidecar_pid={sidecar.Pid}");
    Console.WriteLine($"socket={sidecar.Handshake.Address}");
    Console.Out.Flush();
    Thread.Sleep(Timeout.Infinite);
    GC.KeepAlive(sidecar);
    return 0;
}
catch (SidecarLaunchException e)
{
    Console.Error.WriteLine(e.Message);
    return 1;
}
