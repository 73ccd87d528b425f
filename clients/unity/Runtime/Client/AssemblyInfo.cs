// The Editor assembly's build step reads its settings file with the library's small
// JSON reader (FlatJson) rather than bringing a JSON package into every project; the
// xunit suite compiles that step's Unity-free half too.
using System.Runtime.CompilerServices;

[assembly: InternalsVisibleTo("GameSidecar.Editor")]
[assembly: InternalsVisibleTo("GameSidecar.Client.Tests")]
