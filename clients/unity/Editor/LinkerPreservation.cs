#nullable enable
// IL2CPP keeps what gRPC and protobuf reach through reflection: the package's own
// link.xml, handed to Unity's linker from here (a link.xml inside a package is not
// read on its own, and copying one into Assets/ is a step a user can forget).
using System.IO;
using UnityEditor.Build;
using UnityEditor.Build.Reporting;
using UnityEditor.UnityLinker;

namespace GameSidecar.Editor
{
    /// <summary>Adds the package's link.xml to every IL2CPP build.</summary>
    public sealed class LinkerPreservation : IUnityLinkerProcessor
    {
        /// <summary>The package's link.xml as Unity resolves package paths, wherever the package is installed.</summary>
        public const string LinkXml = "Packages/com.game-sidecar.client/link.xml";

        /// <summary>Any order: the linker merges every file it is given.</summary>
        public int callbackOrder => 0;

        /// <summary>The absolute path of the package's link.xml.</summary>
        public string GenerateAdditionalLinkXmlFile(BuildReport report, UnityLinkerBuildPipelineData data) =>
            Path.GetFullPath(LinkXml);

        // Declared by the interface up to Unity 2022 (obsolete, then gone, after it); nothing to do.
        /// <summary>Nothing to do before the linker runs.</summary>
        public void OnBeforeRun(BuildReport report, UnityLinkerBuildPipelineData data) { }
        /// <summary>Nothing to do after the linker runs.</summary>
        public void OnAfterRun(BuildReport report, UnityLinkerBuildPipelineData data) { }
    }
}
