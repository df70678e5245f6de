# Installs stoke::stoke for find_package(stoke).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS stoke stoke_train EXPORT stokeTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/stoke DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(STOKE_TORCH)
  # find_package(stoke COMPONENTS torch): its own export set, since it needs Torch.
  install(TARGETS stoke_torch EXPORT stokeTorchTargets)
  install(EXPORT stokeTorchTargets NAMESPACE stoke:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/stoke)
endif()
install(EXPORT stokeTargets NAMESPACE stoke:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/stoke)
configure_package_config_file(tools/cmake/stokeConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/stokeConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/stoke)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/stokeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/stokeConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/stokeConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/stoke)
if(TARGET stoke-cli)
  install(TARGETS stoke-cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
